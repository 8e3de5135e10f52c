import cdcreplay.codecs.PlainDecoder;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnWriter;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.column.impl.ColumnWriteStoreV1;
import org.apache.parquet.column.page.DictionaryPage;
import org.apache.parquet.column.page.PageWriter;
import org.apache.parquet.column.statistics.SizeStatistics;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.column.statistics.geospatial.GeospatialStatistics;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A probe, not product code ({@code bench/probes/parquet_writers.py} compiles and runs it): what writing the
 * canonical event record (the columns of events/, {@code cdc_codecs.event_schema}) to Parquet costs in the JVM with
 * parquet-mr, the Parquet writer a Spark JVM has (Spark's own writer is built on it; Arrow's dataset writer is not
 * among PySpark's jars, and no Maven is reachable here). Two ways:
 * <ul>
 *   <li>records: {@link ParquetWriter} with a {@link WriteSupport} that feeds parquet-mr's record API, as Spark's
 *   writer does, snappy, to a file;</li>
 *   <li>columns: parquet-mr's column writers fed directly with repetition and definition levels (no record API),
 *   the pages counted and dropped: the encoders' floor, without compression or I/O.</li>
 * </ul>
 * Arguments: a JSON-lines archive file, how many lines, the JVM twin class, rounds. Prints a JSON line per
 * round and way: microseconds per event written.
 */
public final class JvmParquetWrite {
    static final String IMAGE = "(MAP) { repeated group key_value { required binary key (STRING); "
            + "optional binary value (STRING); } }";
    static final MessageType TYPE = MessageTypeParser.parseMessageType("message spark_schema {"
            + " optional binary format (STRING); optional binary op (STRING); optional binary database (STRING);"
            + " optional binary schema (STRING); optional binary table (STRING);"
            + " optional group before " + IMAGE + " optional group after " + IMAGE
            + " optional group columns (LIST) { repeated group list { optional group element {"
            + " optional binary name (STRING); optional binary type_name (STRING); optional int32 jdbc_type;"
            + " optional boolean number; } } }"
            + " optional group primary_key (LIST) { repeated group list { optional binary element (STRING); } }"
            + " optional int64 event_time_ms;"
            + " optional group sequence (LIST) { repeated group list {"
            + " optional fixed_len_byte_array(16) element (DECIMAL(38,0)); } }"
            + " optional binary pos_source (STRING); optional int32 pos_partition; optional int64 pos_offset;"
            + " optional int32 pos_index; optional int64 pos_timestamp_ms; optional binary pos_key;"
            + " optional group pos_headers (LIST) { repeated group list { optional group element {"
            + " optional binary key (STRING); optional binary value; } } }"
            + " optional binary transaction_id (STRING); optional binary ddl (STRING); optional binary vendor (STRING);"
            + " optional binary fragment_key (STRING); optional int32 fragment_index; optional int32 fragment_total;"
            + " optional group removed_columns (LIST) { repeated group list { optional binary element (STRING); } }"
            + " optional boolean replaces_row; optional binary row_id_column (STRING); }");
    static final Binary FORMAT = Binary.fromString("canal-json");
    static final Binary SOURCE = Binary.fromString("/archive/part-00000.jsonl");

    /** One decoded event: its line number and the twin's values in PlainDecoder.FIELDS order. */
    record Event(long line, Object[] r) {}

    public static void main(String[] args) throws Exception {
        byte[] file = Files.readAllBytes(Paths.get(args[0]));
        int n = Integer.parseInt(args[1]);
        PlainDecoder twin = (PlainDecoder) Class.forName(args[2]).getDeclaredConstructor().newInstance();
        int rounds = Integer.parseInt(args[3]);
        List<Event> events = new ArrayList<>();
        int start = 0;
        for (int i = 0, line = 1; i < file.length && line <= n; i++) {
            if (file[i] != '\n') continue;
            List<Object[]> rows = twin.rows(file, start, i - start);
            if (rows == null) throw new IllegalStateException("the twin declined line " + line);
            for (Object[] r : rows) events.add(new Event(line, r));
            start = i + 1;
            line++;
        }
        java.io.File out = java.io.File.createTempFile("probe", ".parquet");
        for (int round = 0; round < rounds; round++) {
            out.delete();
            long t0 = System.nanoTime();
            try (ParquetWriter<Event> w = new Builder(new Path(out.getPath()))
                    .withCompressionCodec(CompressionCodecName.SNAPPY).withConf(new Configuration()).build()) {
                for (Event e : events) w.write(e);
            }
            long t1 = System.nanoTime();
            long pageBytes = columns(events);
            long t2 = System.nanoTime();
            System.out.printf("{\"round\": %d, \"events\": %d, \"records_us\": %.3f, \"records_bytes\": %d, "
                    + "\"columns_us\": %.3f, \"columns_page_bytes\": %d}%n", round, events.size(),
                    (t1 - t0) / 1e3 / events.size(), out.length(), (t2 - t1) / 1e3 / events.size(), pageBytes);
        }
        out.delete();
    }

    static byte[] decimal16(BigDecimal d) {
        byte[] b = d.unscaledValue().toByteArray();
        byte[] f = new byte[16];
        Arrays.fill(f, 0, 16 - b.length, (byte) (b[0] < 0 ? -1 : 0));
        System.arraycopy(b, 0, f, 16 - b.length, b.length);
        return f;
    }

    // -- records: parquet-mr's record API, as Spark's ParquetWriteSupport feeds it --------------------------------

    static final class Builder extends ParquetWriter.Builder<Event, Builder> {
        Builder(Path path) {
            super(path);
        }

        @Override
        protected Builder self() {
            return this;
        }

        @Override
        protected WriteSupport<Event> getWriteSupport(Configuration conf) {
            return new Support();
        }
    }

    static final class Support extends WriteSupport<Event> {
        private RecordConsumer c;

        @Override
        public WriteContext init(Configuration conf) {
            return new WriteContext(TYPE, new HashMap<>());
        }

        @Override
        public void prepareForWrite(RecordConsumer consumer) {
            c = consumer;
        }

        private void binary(String name, int index, Binary value) {
            c.startField(name, index);
            c.addBinary(value);
            c.endField(name, index);
        }

        private void text(String name, int index, Object value) {
            if (value != null) binary(name, index, Binary.fromString((String) value));
        }

        /** A LIST or MAP group: the group, then its repeated field with one group per item. */
        private void repeated(String name, int index, String inner, List<Runnable> items) {
            c.startField(name, index);
            c.startGroup();
            if (!items.isEmpty()) {
                c.startField(inner, 0);
                for (Runnable item : items) {
                    c.startGroup();
                    item.run();
                    c.endGroup();
                }
                c.endField(inner, 0);
            }
            c.endGroup();
            c.endField(name, index);
        }

        @SuppressWarnings("unchecked")
        private void image(String name, int index, Object cells) {
            if (cells == null) return;
            List<Runnable> items = new ArrayList<>();
            for (Map.Entry<String, String> e : ((Map<String, String>) cells).entrySet()) {
                items.add(() -> {
                    text("key", 0, e.getKey());
                    text("value", 1, e.getValue());
                });
            }
            repeated(name, index, "key_value", items);
        }

        @Override
        @SuppressWarnings("unchecked")
        public void write(Event e) {
            Object[] r = e.r();
            c.startMessage();
            binary("format", 0, FORMAT);
            text("op", 1, r[0]);
            text("database", 2, r[1]);
            text("table", 4, r[2]);
            image("before", 5, r[4]);
            image("after", 6, r[5]);
            if (r[6] != null) {
                List<Runnable> items = new ArrayList<>();
                for (Object[] col : (List<Object[]>) r[6]) {
                    items.add(() -> {
                        c.startField("element", 0);
                        c.startGroup();
                        text("name", 0, col[0]);
                        text("type_name", 1, col[1]);
                        if (col[2] != null) {
                            c.startField("jdbc_type", 2);
                            c.addInteger((Integer) col[2]);
                            c.endField("jdbc_type", 2);
                        }
                        if (col[3] != null) {
                            c.startField("number", 3);
                            c.addBoolean((Boolean) col[3]);
                            c.endField("number", 3);
                        }
                        c.endGroup();
                        c.endField("element", 0);
                    });
                }
                repeated("columns", 7, "list", items);
            }
            if (r[7] != null) {
                List<Runnable> items = new ArrayList<>();
                for (String k : (List<String>) r[7]) items.add(() -> text("element", 0, k));
                repeated("primary_key", 8, "list", items);
            }
            if (r[8] != null) {
                c.startField("event_time_ms", 9);
                c.addLong((Long) r[8]);
                c.endField("event_time_ms", 9);
            }
            if (r[9] != null) {
                List<Runnable> items = new ArrayList<>();
                for (BigDecimal d : (BigDecimal[]) r[9]) {
                    items.add(() -> binary("element", 0, Binary.fromConstantByteArray(decimal16(d))));
                }
                repeated("sequence", 10, "list", items);
            }
            binary("pos_source", 11, SOURCE);
            c.startField("pos_offset", 13);
            c.addLong(e.line());
            c.endField("pos_offset", 13);
            if (r[10] != null) {
                c.startField("pos_index", 14);
                c.addInteger((Integer) r[10]);
                c.endField("pos_index", 14);
            }
            repeated("pos_headers", 17, "list", List.of());
            if (r.length > 13) text("transaction_id", 18, r[13]);
            text("vendor", 20, r[11]);
            repeated("removed_columns", 24, "list", List.of());
            c.startField("replaces_row", 25);
            c.addBoolean(false);
            c.endField("replaces_row", 25);
            c.endMessage();
        }
    }

    // -- columns: parquet-mr's column writers fed directly, pages counted and dropped ----------------------------

    static long pageBytes;

    static final class CountingPages implements PageWriter {
        private static long size(BytesInput bytes) {
            try {
                return bytes.toByteArray().length;
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void writePage(BytesInput b, int values, Statistics<?> s, Encoding r, Encoding d, Encoding v) {
            pageBytes += size(b);
        }

        @Override
        public void writePage(BytesInput b, int values, int rows, Statistics<?> s, Encoding r, Encoding d, Encoding v) {
            pageBytes += size(b);
        }

        @Override
        public void writePage(BytesInput b, int values, int rows, Statistics<?> s, SizeStatistics z, Encoding r,
                              Encoding d, Encoding v) {
            pageBytes += size(b);
        }

        @Override
        public void writePage(BytesInput b, int values, int rows, Statistics<?> s, SizeStatistics z,
                              GeospatialStatistics g, Encoding r, Encoding d, Encoding v) {
            pageBytes += size(b);
        }

        @Override
        public void writePageV2(int rows, int nulls, int values, BytesInput r, BytesInput d, Encoding e,
                                BytesInput data, Statistics<?> s) {
            pageBytes += size(data);
        }

        @Override
        public long getMemSize() {
            return 0;
        }

        @Override
        public long allocatedSize() {
            return 0;
        }

        @Override
        public void writeDictionaryPage(DictionaryPage page) throws java.io.IOException {
            pageBytes += page.getBytes().size();
        }

        @Override
        public String memUsageString(String prefix) {
            return prefix;
        }
    }

    private static ColumnWriter[] w;

    private static int leaf(String... path) {
        List<ColumnDescriptor> leaves = TYPE.getColumns();
        for (int i = 0; i < leaves.size(); i++) if (Arrays.equals(leaves.get(i).getPath(), path)) return i;
        throw new IllegalArgumentException(String.join(".", path));
    }

    /** A text leaf at definition level {@code dl} when present (one less when NULL). */
    private static void text(int leaf, Object value, int rl, int dl) {
        if (value == null) w[leaf].writeNull(rl, dl - 1);
        else w[leaf].write(Binary.fromString((String) value), rl, dl);
    }

    /** Leaves a NULL group (dl 0) or an empty list (dl 1) covers. */
    private static void none(int dl, int... leaves) {
        for (int leaf : leaves) w[leaf].writeNull(0, dl);
    }

    @SuppressWarnings("unchecked")
    static long columns(List<Event> events) {
        final int format = leaf("format"), op = leaf("op"), database = leaf("database"), schema = leaf("schema"),
                table = leaf("table"), columnName = leaf("columns", "list", "element", "name"),
                columnType = leaf("columns", "list", "element", "type_name"),
                columnJdbc = leaf("columns", "list", "element", "jdbc_type"),
                columnNumber = leaf("columns", "list", "element", "number"),
                pk = leaf("primary_key", "list", "element"), time = leaf("event_time_ms"),
                sequence = leaf("sequence", "list", "element"), source = leaf("pos_source"),
                partition = leaf("pos_partition"), offset = leaf("pos_offset"), index = leaf("pos_index"),
                timestamp = leaf("pos_timestamp_ms"), key = leaf("pos_key"),
                headerKey = leaf("pos_headers", "list", "element", "key"),
                headerValue = leaf("pos_headers", "list", "element", "value"), tx = leaf("transaction_id"),
                ddl = leaf("ddl"), vendor = leaf("vendor"), fragmentKey = leaf("fragment_key"),
                fragmentIndex = leaf("fragment_index"), fragmentTotal = leaf("fragment_total"),
                removed = leaf("removed_columns", "list", "element"), replaces = leaf("replaces_row"),
                rowId = leaf("row_id_column");
        final int[][] images = {{leaf("before", "key_value", "key"), leaf("before", "key_value", "value")},
                {leaf("after", "key_value", "key"), leaf("after", "key_value", "value")}};
        pageBytes = 0;
        ParquetProperties props = ParquetProperties.builder().withPageWriteChecksumEnabled(false).build();
        Map<ColumnDescriptor, PageWriter> pages = new HashMap<>();
        ColumnWriteStoreV1 store = new ColumnWriteStoreV1(TYPE, d -> pages.computeIfAbsent(d, x -> new CountingPages()),
                props);
        w = new ColumnWriter[TYPE.getColumns().size()];
        for (int i = 0; i < w.length; i++) w[i] = store.getColumnWriter(TYPE.getColumns().get(i));
        for (Event e : events) {
            Object[] r = e.r();
            w[format].write(FORMAT, 0, 1);
            text(op, r[0], 0, 1);
            text(database, r[1], 0, 1);
            none(0, schema);
            text(table, r[2], 0, 1);
            for (int img = 0; img < 2; img++) {
                Map<String, String> cells = (Map<String, String>) r[4 + img];
                if (cells == null || cells.isEmpty()) {
                    none(cells == null ? 0 : 1, images[img]);
                    continue;
                }
                int rl = 0;
                for (Map.Entry<String, String> cell : cells.entrySet()) {
                    w[images[img][0]].write(Binary.fromString(cell.getKey()), rl, 2);
                    text(images[img][1], cell.getValue(), rl, 3);
                    rl = 1;
                }
            }
            List<Object[]> cols = (List<Object[]>) r[6];
            if (cols == null || cols.isEmpty()) {
                none(cols == null ? 0 : 1, columnName, columnType, columnJdbc, columnNumber);
            } else {
                int rl = 0;
                for (Object[] col : cols) {
                    text(columnName, col[0], rl, 4);
                    text(columnType, col[1], rl, 4);
                    if (col[2] == null) w[columnJdbc].writeNull(rl, 3);
                    else w[columnJdbc].write((Integer) col[2], rl, 4);
                    if (col[3] == null) w[columnNumber].writeNull(rl, 3);
                    else w[columnNumber].write((Boolean) col[3], rl, 4);
                    rl = 1;
                }
            }
            List<String> keys = (List<String>) r[7];
            if (keys == null || keys.isEmpty()) {
                none(keys == null ? 0 : 1, pk);
            } else {
                int rl = 0;
                for (String k : keys) {
                    text(pk, k, rl, 3);
                    rl = 1;
                }
            }
            if (r[8] == null) none(0, time);
            else w[time].write((Long) r[8], 0, 1);
            BigDecimal[] seq = (BigDecimal[]) r[9];
            if (seq == null || seq.length == 0) {
                none(seq == null ? 0 : 1, sequence);
            } else {
                int rl = 0;
                for (BigDecimal d : seq) {
                    w[sequence].write(Binary.fromConstantByteArray(decimal16(d)), rl, 3);
                    rl = 1;
                }
            }
            w[source].write(SOURCE, 0, 1);
            none(0, partition, timestamp, key, ddl, fragmentKey, fragmentIndex, fragmentTotal, rowId);
            w[offset].write(e.line(), 0, 1);
            if (r[10] == null) none(0, index);
            else w[index].write((Integer) r[10], 0, 1);
            none(1, headerKey, headerValue, removed);
            text(tx, r.length > 13 ? r[13] : null, 0, 1);
            text(vendor, r[11], 0, 1);
            w[replaces].write(false, 0, 1);
            store.endRecord();
        }
        store.flush();
        store.close();
        return pageBytes;
    }
}
