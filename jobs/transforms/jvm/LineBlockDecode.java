package cdcreplay.jobs;

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
import org.apache.spark.sql.api.java.UDF3;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A block of whole lines of an archive file -> the rows of its lines as one Arrow IPC stream: a row per event the
 * codec's JVM twin decoded, and a row per line it declined (the line's bytes, for the Python codec). The rows go
 * to Python as Arrow columns built here, not as Spark rows: Spark's row conversions of the nested event fields
 * cost more than the decode itself. Lines as the Python reader numbers them ({@code cdc_jobs.io.files.read_lines}):
 * split at "\n", trailing "\r" and "\n" dropped, blank lines skipped but counted. Format-neutral: the caller
 * ({@code cdc_jobs.transforms.jvm_decode}) names the decoder.
 *
 * <p>Arguments: the {@link PlainDecoder} class, the number of the block's first line, the block. The stream's
 * columns: pos_offset (the line number), value (the declined line, else null), then {@link PlainDecoder#FIELDS}
 * with the types of the event record ({@code cdc_codecs.event_schema}).
 */
public final class LineBlockDecode implements UDF3<String, Long, byte[], byte[]> {
    private static final BufferAllocator ALLOCATOR = new RootAllocator(Long.MAX_VALUE);
    private static final ArrowType UTF8 = ArrowType.Utf8.INSTANCE;
    private static final ArrowType LIST = ArrowType.List.INSTANCE;
    private static final ArrowType STRUCT = ArrowType.Struct.INSTANCE;
    private static final ArrowType INT32 = new ArrowType.Int(32, true);
    private static final ArrowType INT64 = new ArrowType.Int(64, true);
    private static final ArrowType BOOL = ArrowType.Bool.INSTANCE;
    public static final Schema SCHEMA = new Schema(Arrays.asList(
            field("pos_offset", INT64, false), field("value", ArrowType.Binary.INSTANCE, true),
            field("op", UTF8, true), field("database", UTF8, true), field("table", UTF8, true),
            field("table_name", UTF8, true), image("before"), image("after"),
            field("columns", LIST, true, field("item", STRUCT, true, field("name", UTF8, true),
                    field("type_name", UTF8, true), field("jdbc_type", INT32, true), field("number", BOOL, true))),
            field("primary_key", LIST, true, field("item", UTF8, true)),
            field("event_time_ms", INT64, true),
            field("sequence", LIST, true, field("item", new ArrowType.Decimal(38, 0, 128), true)),
            field("pos_index", INT32, true), field("vendor", UTF8, true), field("first_of_record", BOOL, true)));

    private static Field field(String name, ArrowType type, boolean nullable, Field... children) {
        return new Field(name, new FieldType(nullable, type, null), children.length == 0 ? null : Arrays.asList(children));
    }

    private static Field image(String name) {
        return field(name, new ArrowType.Map(false), true, field("entries", STRUCT, false,
                field("key", UTF8, false), field("value", UTF8, true)));
    }

    private final Map<String, PlainDecoder> decoders = new HashMap<>();

    @Override
    public byte[] call(String decoderClass, Long firstLine, byte[] block) throws Exception {
        if (block == null) return null;
        PlainDecoder decoder = decoders.get(decoderClass);
        if (decoder == null) {
            decoder = (PlainDecoder) Class.forName(decoderClass).getDeclaredConstructor().newInstance();
            decoders.put(decoderClass, decoder);
        }
        try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, ALLOCATOR)) {
            Rows rows = new Rows(root);
            long records = 0;
            long line = firstLine;
            int start = 0;
            int n = block.length;
            while (start < n) {
                int end = start;
                while (end < n && block[end] != '\n') end++;
                int stop = end;
                while (stop > start && (block[stop - 1] == '\r' || block[stop - 1] == '\n')) stop--;
                if (!blank(block, start, stop)) {
                    records++;
                    List<Object[]> decoded = decoder.rows(block, start, stop - start);
                    if (decoded == null) {
                        rows.declined(line, Arrays.copyOfRange(block, start, stop));
                    } else {
                        for (Object[] r : decoded) rows.decoded(line, r);
                    }
                }
                line++;
                start = end + 1;
            }
            countRead(records - 1);
            root.setRowCount(rows.count);
            ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(1024, block.length * 2));
            try (ArrowStreamWriter writer = new ArrowStreamWriter(root, null, Channels.newChannel(out))) {
                writer.start();
                writer.writeBatch();
                writer.end();
            }
            return out.toByteArray();
        }
    }

    /** Python's bytes.strip() whitespace only. */
    private static boolean blank(byte[] b, int start, int stop) {
        for (int i = start; i < stop; i++) {
            byte c = b[i];
            if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0x0b || c == 0x0c)) return false;
        }
        return true;
    }

    /** Spark counted the block as one record read; the job's progress (cdc_jobs.progress) reports records, which
     *  are its lines. Spark-internal (public in bytecode), so a Spark without it only leaves the count short. */
    private static void countRead(long more) {
        try {
            TaskContext task = TaskContext.get();
            if (task != null && more != 0) task.taskMetrics().inputMetrics().incRecordsRead(more);
        } catch (LinkageError e) {
            // the count stays as Spark saw it
        }
    }

    private static byte[] utf8(Object s) {
        return ((String) s).getBytes(StandardCharsets.UTF_8);
    }

    /** The stream's vectors, filled row by row (a value not set stays NULL). */
    private static final class Rows {
        final BigIntVector offset, eventTime;
        final VarBinaryVector value;
        final VarCharVector op, database, table, tableName, vendor;
        final MapVector before, after;
        final ListVector columns, primaryKey, sequence;
        final IntVector posIndex;
        final BitVector first;
        // the children of the nested vectors, looked up once
        final StructVector columnItem, beforeEntries, afterEntries;
        final VarCharVector columnName, columnType, beforeKeys, beforeValues, afterKeys, afterValues, pkItem;
        final IntVector columnJdbc;
        final BitVector columnNumber;
        final DecimalVector sequenceItem;
        int count;

        Rows(VectorSchemaRoot root) {
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
}
