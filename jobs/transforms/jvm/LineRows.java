package cdcreplay.jobs;

import cdcreplay.codecs.PlainDecoder;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * Blocks of whole lines of archive files (rows of pos_source, first_line, value: {@code cdc_jobs.io.files}'s block
 * reader) -> a Spark row per event the codec's declared decode ({@code DeclaredJson}) took, and a row per line it
 * declined (the line's bytes in {@code value}, every event field null), in line order. Spark's own rows, made here
 * as Spark keeps them (no Arrow stream to a Python task and back): {@code cdc_jobs.transforms.jvm_decode} adds the
 * fields that are the same on every row and has the Python codec decode the declined lines in the same pass.
 * Lines as the Python reader numbers them ({@code cdc_jobs.io.files.read_lines}): split at "\n", trailing "\r" and
 * "\n" dropped, blank lines skipped but counted.
 */
public final class LineRows {
    private LineRows() {
    }

    /** The rows of {@code blocks} decoded by {@code declaration}, of the {@code schema} (Spark's JSON of a struct
     *  type) that {@code cdc_jobs.transforms.jvm_decode.LINE_ROWS} derives from the DECODED rows: pos_source,
     *  pos_offset (the line number), value (a declined line's bytes), then {@link PlainDecoder#FIELDS}. */
    public static Dataset<Row> rows(org.apache.spark.sql.classic.Dataset<Row> blocks, String declaration,
                                    String schema) {
        StructType out = (StructType) DataType.fromJson(schema);
        StructType in = blocks.schema();
        int source = in.fieldIndex("pos_source"), first = in.fieldIndex("first_line"), value = in.fieldIndex("value");
        RDD<InternalRow> decoded = blocks.queryExecution().toRdd().toJavaRDD()
                .mapPartitions((FlatMapFunction<Iterator<InternalRow>, InternalRow>) it ->
                        new Lines(it, declaration, source, first, value, out.size())).rdd();
        return blocks.sparkSession().internalCreateDataFrame(decoded, out, false);
    }

    /** One Spark partition's blocks, decoded a block at a time as their rows are asked for. */
    private static final class Lines implements Iterator<InternalRow> {
        private final Iterator<InternalRow> blocks;
        private final PlainDecoder decoder;
        private final int source, first, value, width;
        private final Converted converted;
        private final List<InternalRow> ready = new ArrayList<>();
        private int next;

        Lines(Iterator<InternalRow> blocks, String declaration, int source, int first, int value, int width)
                throws Exception {
            this.blocks = blocks;
            this.width = width;
            this.converted = new Converted(width);
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
                    if (decoded == null) {
                        Object[] declined = new Object[width];
                        declined[0] = path;
                        declined[1] = line;
                        declined[2] = java.util.Arrays.copyOfRange(block, start, stop);
                        ready.add(new GenericInternalRow(declined));
                    } else {
                        for (Object[] r : decoded) ready.add(converted.row(path, line, r));
                    }
                }
                line++;
                start = end + 1;
            }
            TwinRows.countRead(records - 1);
        }
    }

    /** A decoder's row (PlainDecoder.FIELDS order) as Spark's values; the column lists a declaration's rows share
     *  are converted once (by identity, as TwinRows numbers them). */
    private static final class Converted {
        private final IdentityHashMap<List<Object[]>, ArrayData> columnLists = new IdentityHashMap<>();
        private final int width;

        Converted(int width) {
            this.width = width;
        }

        @SuppressWarnings("unchecked")
        InternalRow row(UTF8String path, long line, Object[] r) {
            Object[] out = new Object[width];
            out[0] = path;
            out[1] = line;
            out[3] = text(r[0]);
            out[4] = text(r[1]);
            out[5] = text(r[2]);
            out[6] = text(r[3]);
            out[7] = image((Map<String, String>) r[4]);
            out[8] = image((Map<String, String>) r[5]);
            if (r[6] != null) out[9] = columns((List<Object[]>) r[6]);
            if (r[7] != null) {
                List<String> pk = (List<String>) r[7];
                Object[] keys = new Object[pk.size()];
                for (int i = 0; i < keys.length; i++) keys[i] = text(pk.get(i));
                out[10] = new GenericArrayData(keys);
            }
            out[11] = r[8];
            if (r[9] != null) {
                BigDecimal[] seq = (BigDecimal[]) r[9];
                Object[] parts = new Object[seq.length];
                for (int i = 0; i < seq.length; i++) parts[i] = seq[i] == null ? null : Decimal.apply(seq[i], 38, 0);
                out[12] = new GenericArrayData(parts);
            }
            out[13] = r[10];
            out[14] = text(r[11]);
            out[15] = r[12];
            if (r.length > 13) out[16] = text(r[13]);  // optional: a decoder may leave them off
            if (r.length > 14) out[17] = text(r[14]);
            out[18] = r.length > 15 && r[15] == Boolean.TRUE;  // replaces_row: an UPDATE whose after is the whole row
            out[19] = names(r.length > 16 ? (List<String>) r[16] : null);  // removed_columns: none is an empty list
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
                made = new GenericArrayData(items);
                columnLists.put(cols, made);
            }
            return made;
        }

        private static ArrayData names(List<String> names) {
            if (names == null || names.isEmpty()) return EMPTY;
            Object[] items = new Object[names.size()];
            for (int i = 0; i < items.length; i++) items[i] = text(names.get(i));
            return new GenericArrayData(items);
        }

        private static final ArrayData EMPTY = new GenericArrayData(new Object[0]);

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
