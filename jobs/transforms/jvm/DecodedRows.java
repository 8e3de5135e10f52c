package cdcreplay.jobs;

import cdcreplay.codecs.PlainDecoder;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * Messages -> a Spark row per event the codec's JVM decode took (its declaration's {@code DeclaredJson}, or its
 * message decoder), and a row per message it declined (every event field null), in message order. Spark's own rows,
 * made here as Spark keeps them (no Arrow stream to a Python task and back): {@code cdc_jobs.transforms.jvm_decode}
 * adds the fields that are the same on every row and has the Python codec decode the declined messages in the same
 * pass. Two inputs:
 * <ul>
 * <li>{@link #lines}: blocks of whole lines of archive files (pos_source, first_line, value: {@code
 * cdc_jobs.io.files}' block reader), split and numbered as the Python reader does ({@code read_lines}): at "\n",
 * trailing "\r" and "\n" dropped, blank lines skipped but counted; a declined line's bytes in {@code value};</li>
 * <li>{@link #records}: Kafka records (RAW rows, as Spark's Kafka source reads them), each row with its record's
 * position; a declined record's bytes in {@code value}, {@code declined} set (a tombstone has no bytes).</li>
 * </ul>
 */
public final class DecodedRows {
    private DecodedRows() {
    }

    private static final StructType COLUMN = new StructType().add("name", DataTypes.StringType)
            .add("type_name", DataTypes.StringType).add("jdbc_type", DataTypes.IntegerType)
            .add("number", DataTypes.BooleanType);
    private static final org.apache.spark.sql.types.DataType IMAGE =
            DataTypes.createMapType(DataTypes.StringType, DataTypes.StringType, true);

    /** {@link PlainDecoder#FIELDS} with the types of the DECODED rows ({@code cdc_codecs.event_schema}). */
    static final StructType FIELDS = new StructType()
            .add("op", DataTypes.StringType).add("database", DataTypes.StringType)
            .add("table", DataTypes.StringType).add("table_name", DataTypes.StringType)
            .add("before", IMAGE).add("after", IMAGE)
            .add("columns", DataTypes.createArrayType(COLUMN, true))
            .add("primary_key", DataTypes.createArrayType(DataTypes.StringType, true))
            .add("event_time_ms", DataTypes.LongType)
            .add("sequence", DataTypes.createArrayType(DataTypes.createDecimalType(38, 0), true))
            .add("pos_index", DataTypes.IntegerType).add("vendor", DataTypes.StringType)
            .add("first_of_record", DataTypes.BooleanType).add("transaction_id", DataTypes.StringType)
            .add("schema", DataTypes.StringType);
    /** The rows of {@link #lines}: pos_source, pos_offset (the line number), value, then {@link #FIELDS}. */
    static final StructType LINE_SCHEMA = fields(new StructType().add("pos_source", DataTypes.StringType)
            .add("pos_offset", DataTypes.LongType, false).add("value", DataTypes.BinaryType));

    private static StructType fields(StructType head) {
        for (org.apache.spark.sql.types.StructField f : FIELDS.fields()) head = head.add(f);
        return head;
    }

    /** The rows of line {@code blocks} decoded by {@code decoder} (called from Python:
     *  {@code cdc_jobs.transforms.jvm_decode.line_rows}). */
    public static Dataset<Row> lines(org.apache.spark.sql.classic.Dataset<Row> blocks, String decoder) {
        StructType in = blocks.schema();
        int source = in.fieldIndex("pos_source"), first = in.fieldIndex("first_line"), value = in.fieldIndex("value");
        return rows(blocks, LINE_SCHEMA, it -> new Lines(it, decoder, source, first, value));
    }

    /** The rows of Kafka records ({@code raw}: RAW rows) decoded by {@code decoder}: the RAW columns (value only
     *  where declined), declined, then {@link #FIELDS} (called from Python:
     *  {@code cdc_jobs.transforms.jvm_decode.record_rows}). */
    public static Dataset<Row> records(org.apache.spark.sql.classic.Dataset<Row> raw, String decoder) {
        StructType in = raw.schema();
        StructType schema = new StructType();
        for (String name : RAW) schema = schema.add(in.apply(name));
        int value = in.fieldIndex("value");
        int[] at = new int[RAW.length];
        for (int i = 0; i < RAW.length; i++) at[i] = in.fieldIndex(RAW[i]);
        StructType out = fields(schema.add("declined", DataTypes.BooleanType, false));
        return rows(raw, out, it -> new Records(it, decoder, at, value, in));
    }

    /** A RAW row's columns, in the order a record's rows begin with. */
    private static final String[] RAW = {"pos_source", "pos_partition", "pos_offset", "pos_timestamp_ms", "pos_key",
            "pos_headers", "value"};

    private interface Rows extends java.io.Serializable {
        Iterator<InternalRow> of(Iterator<InternalRow> in) throws Exception;
    }

    private static Dataset<Row> rows(org.apache.spark.sql.classic.Dataset<Row> in, StructType schema, Rows rows) {
        RDD<InternalRow> decoded = in.queryExecution().toRdd().toJavaRDD()
                .mapPartitions((FlatMapFunction<Iterator<InternalRow>, InternalRow>) rows::of).rdd();
        return in.sparkSession().internalCreateDataFrame(decoded, schema, false);
    }

    /** One Spark partition's Kafka records, each decoded as its rows are asked for. */
    private static final class Records implements Iterator<InternalRow> {
        private final Iterator<InternalRow> records;
        private final PlainDecoder decoder;
        private final int[] at;
        private final int value, stamp;
        private final org.apache.spark.sql.types.DataType[] types;
        private final Converted converted;
        private final List<InternalRow> ready = new ArrayList<>();
        private int next;

        Records(Iterator<InternalRow> records, String decoder, int[] at, int value, StructType in) throws Exception {
            this.records = records;
            this.decoder = TwinRows.twin(new HashMap<>(), decoder, PlainDecoder.class);
            this.at = at;
            this.value = value;
            this.stamp = in.fieldIndex("pos_timestamp_ms");
            types = new org.apache.spark.sql.types.DataType[at.length];
            for (int i = 0; i < at.length; i++) types[i] = in.fields()[at[i]].dataType();
            converted = new Converted(RAW.length + 1);
        }

        @Override
        public boolean hasNext() {
            while (next == ready.size()) {
                if (!records.hasNext()) return false;
                ready.clear();
                next = 0;
                record(records.next());
            }
            return true;
        }

        @Override
        public InternalRow next() {
            if (!hasNext()) throw new NoSuchElementException();
            return ready.get(next++);
        }

        private void record(InternalRow row) {
            Object[] position = new Object[RAW.length + 1];
            for (int i = 0; i < RAW.length - 1; i++) {  // copies: the source's row is reused
                Object v = row.isNullAt(at[i]) ? null : row.get(at[i], types[i]);
                position[i] = v instanceof UTF8String ? ((UTF8String) v).clone()
                        : v instanceof ArrayData ? ((ArrayData) v).copy() : v;
            }
            byte[] message = row.isNullAt(value) ? null : row.getBinary(value);
            Long millis = row.isNullAt(stamp) ? null : row.getLong(stamp);
            List<Object[]> decoded = message == null ? null : decoder.rows(message, 0, message.length, millis);
            if (decoded == null) {  // declined, or a tombstone: the codec decodes it
                Object[] declined = Arrays.copyOf(position, RAW.length + 1 + FIELDS.size());
                declined[RAW.length - 1] = message;
                declined[RAW.length] = true;
                ready.add(new GenericInternalRow(declined));
            } else {
                position[RAW.length] = false;
                for (Object[] r : decoded) ready.add(converted.row(position, r));
            }
        }
    }

    /** One Spark partition's blocks, decoded a block at a time as their rows are asked for. */
    private static final class Lines implements Iterator<InternalRow> {
        private final Iterator<InternalRow> blocks;
        private final PlainDecoder decoder;
        private final int source, first, value;
        private final Converted converted = new Converted(3);
        private final List<InternalRow> ready = new ArrayList<>();
        private int next;

        Lines(Iterator<InternalRow> blocks, String declaration, int source, int first, int value) throws Exception {
            this.blocks = blocks;
            this.decoder = TwinRows.twin(new HashMap<>(), declaration, PlainDecoder.class);
            this.source = source;
            this.first = first;
            this.value = value;
        }

        @Override
        public boolean hasNext() {
            while (next == ready.size()) {
                if (!blocks.hasNext()) return false;
                ready.clear();
                next = 0;
                block(blocks.next());
            }
            return true;
        }

        @Override
        public InternalRow next() {
            if (!hasNext()) throw new NoSuchElementException();
            return ready.get(next++);
        }

        private void block(InternalRow row) {
            if (row.isNullAt(value)) return;
            UTF8String path = row.isNullAt(source) ? null : row.getUTF8String(source).clone();  // the row is reused
            byte[] block = row.getBinary(value);
            long line = row.getLong(first);
            long records = 0;
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
                    Object[] position = {path, line, null};
                    if (decoded == null) {
                        Object[] declined = Arrays.copyOf(position, LINE_SCHEMA.size());
                        declined[2] = Arrays.copyOfRange(block, start, stop);
                        ready.add(new GenericInternalRow(declined));
                    } else {
                        for (Object[] r : decoded) ready.add(converted.row(position, r));
                    }
                }
                line++;
                start = end + 1;
            }
            TwinRows.countRead(records - 1);
        }
    }

    /** A decoder's row (PlainDecoder.FIELDS order) as Spark's values after the columns of its message's position;
     *  the column lists a declaration's rows share are converted once (by identity, as TwinRows numbers them). */
    private static final class Converted {
        private final IdentityHashMap<List<Object[]>, ArrayData> columnLists = new IdentityHashMap<>();
        private final UnsafeProjection unsafeColumns = UnsafeProjection.create(
                new StructType().add("columns", FIELDS.apply("columns").dataType()));
        private final int head;

        Converted(int head) {
            this.head = head;
        }

        @SuppressWarnings("unchecked")
        InternalRow row(Object[] position, Object[] r) {
            Object[] out = Arrays.copyOf(position, head + FIELDS.size());
            int h = head;
            out[h] = text(r[0]);
            out[h + 1] = text(r[1]);
            out[h + 2] = text(r[2]);
            out[h + 3] = text(r[3]);
            out[h + 4] = image((Map<String, String>) r[4]);
            out[h + 5] = image((Map<String, String>) r[5]);
            if (r[6] != null) out[h + 6] = columns((List<Object[]>) r[6]);
            if (r[7] != null) {
                List<String> pk = (List<String>) r[7];
                Object[] keys = new Object[pk.size()];
                for (int i = 0; i < keys.length; i++) keys[i] = text(pk.get(i));
                out[h + 7] = new GenericArrayData(keys);
            }
            out[h + 8] = r[8];
            if (r[9] != null) {
                BigDecimal[] seq = (BigDecimal[]) r[9];
                Object[] parts = new Object[seq.length];
                for (int i = 0; i < seq.length; i++) parts[i] = seq[i] == null ? null : Decimal.apply(seq[i], 38, 0);
                out[h + 9] = new GenericArrayData(parts);
            }
            out[h + 10] = r[10];
            out[h + 11] = text(r[11]);
            out[h + 12] = r[12];
            if (r.length > 13) out[h + 13] = text(r[13]);  // optional: a decoder may leave them off
            if (r.length > 14) out[h + 14] = text(r[14]);
            return new GenericInternalRow(out);
        }

        private ArrayData columns(List<Object[]> cols) {
            ArrayData made = columnLists.get(cols);
            if (made == null) {
                if (columnLists.size() > 4096) columnLists.clear();  // a task of many declarations: keep it bounded
                Object[] items = new Object[cols.size()];
                for (int i = 0; i < items.length; i++) {
                    Object[] c = cols.get(i);
                    items[i] = new GenericInternalRow(new Object[]{text(c[0]), text(c[1]), c[2], c[3]});
                }
                // Kept as Spark stores it: the scan's copy of each row then copies the list's bytes at once
                // instead of its every name and type (the lists are a large part of a row's values).
                made = unsafeColumns.apply(new GenericInternalRow(new Object[]{new GenericArrayData(items)}))
                        .getArray(0).copy();
                columnLists.put(cols, made);
            }
            return made;
        }

        private static UTF8String text(Object s) {
            return s == null ? null : UTF8String.fromString((String) s);
        }

        private static ArrayBasedMapData image(Map<String, String> cells) {
            if (cells == null) return null;
            Object[] keys = new Object[cells.size()];
            Object[] values = new Object[cells.size()];
            int i = 0;
            for (Map.Entry<String, String> e : cells.entrySet()) {
                keys[i] = UTF8String.fromString(e.getKey());
                values[i++] = text(e.getValue());
            }
            return new ArrayBasedMapData(new GenericArrayData(keys), new GenericArrayData(values));
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
}
