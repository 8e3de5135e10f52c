package cdcreplay.jobs;

import cdcreplay.codecs.DeclaredJson;
import cdcreplay.codecs.PlainDecoder;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.TaskContext;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The rows the decode adapters ({@link RecordBlockDecode}, {@link AvroBlockDecode}) hand to Python: one Arrow IPC
 * stream per block, with the columns pos_offset (the line or record number), value (the bytes of a message the JVM
 * decode declined, else null), then {@link PlainDecoder#FIELDS} with the types of the event record
 * ({@code cdc_codecs.event_schema}). A row with neither value nor op marks where the Python reader takes over.
 */
final class TwinRows implements AutoCloseable {
    private static final BufferAllocator ALLOCATOR = new RootAllocator(Long.MAX_VALUE);
    private static final ArrowType UTF8 = ArrowType.Utf8.INSTANCE;
    private static final ArrowType LIST = ArrowType.List.INSTANCE;
    private static final ArrowType STRUCT = ArrowType.Struct.INSTANCE;
    private static final ArrowType INT32 = new ArrowType.Int(32, true);
    private static final ArrowType INT64 = new ArrowType.Int(64, true);
    private static final ArrowType BOOL = ArrowType.Bool.INSTANCE;
    static final Schema SCHEMA = new Schema(Arrays.asList(
            field("pos_offset", INT64, false), field("value", ArrowType.Binary.INSTANCE, true),
            field("op", UTF8, true), field("database", UTF8, true), field("table", UTF8, true),
            field("table_name", UTF8, true), image("before"), image("after"),
            field("columns", LIST, true, field("item", STRUCT, true, field("name", UTF8, true),
                    field("type_name", UTF8, true), field("jdbc_type", INT32, true), field("number", BOOL, true))),
            field("primary_key", LIST, true, field("item", UTF8, true)),
            field("event_time_ms", INT64, true),
            field("sequence", LIST, true, field("item", new ArrowType.Decimal(38, 0, 128), true)),
            field("pos_index", INT32, true), field("vendor", UTF8, true), field("first_of_record", BOOL, true),
            field("transaction_id", UTF8, true), field("schema", UTF8, true), field("replaces_row", BOOL, true),
            field("removed_columns", LIST, true, field("item", UTF8, true)), field("columns_ref", INT32, true)));

    private static Field field(String name, ArrowType type, boolean nullable, Field... children) {
        return new Field(name, new FieldType(nullable, type, null), children.length == 0 ? null : Arrays.asList(children));
    }

    private static Field image(String name) {
        return field(name, new ArrowType.Map(false), true, field("entries", STRUCT, false,
                field("key", UTF8, false), field("value", UTF8, true)));
    }

    static byte[] utf8(Object s) {
        return ((String) s).getBytes(StandardCharsets.UTF_8);
    }

    final BigIntVector offset, eventTime;
    final VarBinaryVector value;
    private final VectorSchemaRoot root;
    final VarCharVector op, database, table, tableName, vendor, transactionId, schema;
    final MapVector before, after;
    final ListVector columns, primaryKey, sequence, removedColumns;
    final IntVector posIndex, columnsRef;
    final BitVector first, replacesRow;
    // the children of the nested vectors, looked up once
    final StructVector columnItem, beforeEntries, afterEntries;
    final VarCharVector columnName, columnType, beforeKeys, beforeValues, afterKeys, afterValues, pkItem, removedItem;
    final IntVector columnJdbc;
    final BitVector columnNumber;
    final DecimalVector sequenceItem;
    int count;
    // The column lists of the block, by identity: a decoder hands every event of a declaration the same list
    // (DeclaredJson keeps its recent ones), so the block holds each list once, at the first row that declares
    // it, and columns_ref numbers the lists in that order; stream_rows (jvm_decode.py) puts them back on every
    // row in C++. Written per row, the column lists were about a third of the values this class wrote.
    private final java.util.IdentityHashMap<List<Object[]>, Integer> columnLists = new java.util.IdentityHashMap<>();

    TwinRows() {
        root = VectorSchemaRoot.create(SCHEMA, ALLOCATOR);
        root.allocateNew();
        offset = (BigIntVector) root.getVector("pos_offset");
        value = (VarBinaryVector) root.getVector("value");
        op = (VarCharVector) root.getVector("op");
        database = (VarCharVector) root.getVector("database");
        table = (VarCharVector) root.getVector("table");
        tableName = (VarCharVector) root.getVector("table_name");
        before = (MapVector) root.getVector("before");
        after = (MapVector) root.getVector("after");
        columns = (ListVector) root.getVector("columns");
        primaryKey = (ListVector) root.getVector("primary_key");
        eventTime = (BigIntVector) root.getVector("event_time_ms");
        sequence = (ListVector) root.getVector("sequence");
        posIndex = (IntVector) root.getVector("pos_index");
        vendor = (VarCharVector) root.getVector("vendor");
        first = (BitVector) root.getVector("first_of_record");
        transactionId = (VarCharVector) root.getVector("transaction_id");
        schema = (VarCharVector) root.getVector("schema");
        replacesRow = (BitVector) root.getVector("replaces_row");
        removedColumns = (ListVector) root.getVector("removed_columns");
        removedItem = (VarCharVector) removedColumns.getDataVector();
        columnsRef = (IntVector) root.getVector("columns_ref");
        columnItem = (StructVector) columns.getDataVector();
        columnName = (VarCharVector) columnItem.getChild("name");
        columnType = (VarCharVector) columnItem.getChild("type_name");
        columnJdbc = (IntVector) columnItem.getChild("jdbc_type");
        columnNumber = (BitVector) columnItem.getChild("number");
        beforeEntries = (StructVector) before.getDataVector();
        beforeKeys = (VarCharVector) beforeEntries.getChild(MapVector.KEY_NAME);
        beforeValues = (VarCharVector) beforeEntries.getChild(MapVector.VALUE_NAME);
        afterEntries = (StructVector) after.getDataVector();
        afterKeys = (VarCharVector) afterEntries.getChild(MapVector.KEY_NAME);
        afterValues = (VarCharVector) afterEntries.getChild(MapVector.VALUE_NAME);
        pkItem = (VarCharVector) primaryKey.getDataVector();
        sequenceItem = (DecimalVector) sequence.getDataVector();
    }

    void declined(long line, byte[] raw) {
        offset.setSafe(count, line);
        value.setSafe(count, raw);
        count++;
    }

    /** From message {@code line} on, the Python reader reads the file (the twin could not tell the bytes apart). */
    void takeOver(long line) {
        offset.setSafe(count, line);
        count++;
    }

    /** The declared decode of a declaration's JSON text ({@code jvm_declaration_text}: JSON lines), or the
     *  container twin class {@code name} (Avro), made once per adapter (an adapter lives as long as its task). */
    static <T> T twin(Map<String, T> made, String name, Class<T> kind) throws Exception {
        T twin = made.get(name);
        if (twin == null) {
            twin = kind.cast(name.startsWith("{") ? new DeclaredJson(name)
                    : Class.forName(name).getDeclaredConstructor().newInstance());
            made.put(name, twin);
        }
        return twin;
    }

    /** The rows as one Arrow IPC stream. */
    byte[] stream(int sizeHint) throws java.io.IOException {
        root.setRowCount(count);
        ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(1024, sizeHint));
        try (ArrowStreamWriter writer = new ArrowStreamWriter(root, null, Channels.newChannel(out))) {
            writer.start();
            writer.writeBatch();
            writer.end();
        }
        return out.toByteArray();
    }

    @Override
    public void close() {
        root.close();
    }

    /** Spark counted the block as one record read; the job's progress (cdc_jobs.progress) reports records, which
     *  are its messages. Spark-internal (public in bytecode), so a Spark without it only leaves the count short. */
    static void countRead(long more) {
        try {
            TaskContext task = TaskContext.get();
            if (task != null && more != 0) task.taskMetrics().inputMetrics().incRecordsRead(more);
        } catch (LinkageError e) {
            // the count stays as Spark saw it
        }
    }

    /** r: the twin's values in PlainDecoder.FIELDS order. */
    @SuppressWarnings("unchecked")
    void decoded(long line, Object[] r) {
        int i = count++;
        offset.setSafe(i, line);
        text(op, i, r[0]);
        text(database, i, r[1]);
        text(table, i, r[2]);
        text(tableName, i, r[3]);
        image(before, beforeEntries, beforeKeys, beforeValues, i, (Map<String, String>) r[4]);
        image(after, afterEntries, afterKeys, afterValues, i, (Map<String, String>) r[5]);
        if (r[6] != null) {
            List<Object[]> cols = (List<Object[]>) r[6];
            Integer ref = columnLists.get(cols);
            if (ref != null) {  // written at an earlier row of the block: that list's number only
                columnsRef.setSafe(i, ref);
            } else {
                columnsRef.setSafe(i, columnLists.size());
                columnLists.put(cols, columnLists.size());
                columnList(i, cols);
            }
        }
        if (r[7] != null) {
            List<String> pk = (List<String>) r[7];
            int at = primaryKey.startNewValue(i);
            for (String k : pk) text(pkItem, at++, k);
            primaryKey.endValue(i, pk.size());
        }
        if (r[8] != null) eventTime.setSafe(i, (Long) r[8]);
        if (r[9] != null) {
            BigDecimal[] seq = (BigDecimal[]) r[9];
            int at = sequence.startNewValue(i);
            for (BigDecimal d : seq) sequenceItem.setSafe(at++, d);
            sequence.endValue(i, seq.length);
        }
        if (r[10] != null) posIndex.setSafe(i, (Integer) r[10]);
        text(vendor, i, r[11]);
        if (r[12] != null) first.setSafe(i, (Boolean) r[12] ? 1 : 0);
        if (r.length > 13) text(transactionId, i, r[13]);  // optional: a twin may leave them off
        if (r.length > 14) text(schema, i, r[14]);
        replacesRow.setSafe(i, r.length > 15 && r[15] == Boolean.TRUE ? 1 : 0);
        List<String> removed = r.length > 16 && r[16] != null ? (List<String>) r[16] : List.of();  // none: empty
        int at = removedColumns.startNewValue(i);
        for (String name : removed) text(removedItem, at++, name);
        removedColumns.endValue(i, removed.size());
    }

    private void columnList(int i, List<Object[]> cols) {
        int at = columns.startNewValue(i);
        for (Object[] c : cols) {
            text(columnName, at, c[0]);
            text(columnType, at, c[1]);
            if (c[2] != null) columnJdbc.setSafe(at, (Integer) c[2]);
            if (c[3] != null) columnNumber.setSafe(at, (Boolean) c[3] ? 1 : 0);
            columnItem.setIndexDefined(at);
            at++;
        }
        columns.endValue(i, cols.size());
    }

    private static void text(VarCharVector v, int i, Object s) {
        if (s != null) v.setSafe(i, utf8(s));
    }

    private static void image(MapVector v, StructVector entries, VarCharVector keys, VarCharVector values, int i,
                              Map<String, String> cells) {
        if (cells == null) return;
        int at = v.startNewValue(i);
        for (Map.Entry<String, String> e : cells.entrySet()) {
            keys.setSafe(at, utf8(e.getKey()));
            if (e.getValue() != null) values.setSafe(at, utf8(e.getValue()));
            entries.setIndexDefined(at);
            at++;
        }
        v.endValue(i, cells.size());
    }
}
