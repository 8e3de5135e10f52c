package cdcreplay.jobs;

import cdcreplay.codecs.PlainDecoder;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * Kafka records (RAW rows: {@code cdc_jobs.schemas.RAW_SPARK}, as Spark's Kafka source reads them) -> blocks of up to
 * {@code perBlock} consecutive records of one topic partition, each decoded by the codec's declared decode
 * ({@code DeclaredJson}) or its message decoder (a {@link PlainDecoder} class) into one Arrow IPC stream ({@link TwinRows}, pos_offset being the record's number in its
 * block), beside the records' positions as Spark arrays. The records stay in the order the source read them, inside
 * the Spark partition they were read in: no shuffle. A null value (a tombstone) is declined like a message the decode
 * does not take, and its number is listed in {@code tombstones}, so that Python counts it as the Python path does.
 *
 * <p>Line files are split over blocks the file reader already made ({@link LineRows}); records of a
 * topic arrive one per row, so the blocks are made here, over the rows of a Spark partition.
 */
public final class RecordBlockDecode {
    private RecordBlockDecode() {
    }

    /** What a block row holds; pos_headers' type is the RAW rows' own. */
    static StructType blockSchema(StructType raw) {
        return new StructType()
                .add("pos_source", DataTypes.StringType)
                .add("pos_partition", DataTypes.IntegerType)
                .add("offsets", DataTypes.createArrayType(DataTypes.LongType, false))
                .add("stamps", DataTypes.createArrayType(DataTypes.LongType, true))
                .add("keys", DataTypes.createArrayType(DataTypes.BinaryType, true))
                .add("headers", DataTypes.createArrayType(raw.apply("pos_headers").dataType(), true))
                .add("tombstones", DataTypes.createArrayType(DataTypes.IntegerType, false))
                .add("lines", DataTypes.BinaryType);
    }

    /** The block rows of {@code raw} (called from Python: {@code cdc_jobs.transforms.jvm_decode.decode_records}). */
    public static Dataset<Row> blocks(Dataset<Row> raw, String decoder, int perBlock) {
        if (perBlock < 1) throw new IllegalArgumentException("perBlock must be at least 1, got " + perBlock);
        StructType schema = blockSchema(raw.schema());
        int[] at = {raw.schema().fieldIndex("pos_source"), raw.schema().fieldIndex("pos_partition"),
                raw.schema().fieldIndex("pos_offset"), raw.schema().fieldIndex("pos_timestamp_ms"),
                raw.schema().fieldIndex("pos_key"), raw.schema().fieldIndex("pos_headers"),
                raw.schema().fieldIndex("value")};
        return raw.mapPartitions((MapPartitionsFunction<Row, Row>) rows -> new Blocks(rows, decoder, perBlock, at),
                Encoders.row(schema));
    }

    /** The blocks of one Spark partition's records, made as they are asked for. */
    private static final class Blocks implements Iterator<Row> {
        private static final byte[] NONE = new byte[0];
        private final Iterator<Row> records;
        private final PlainDecoder decoder;
        private final int perBlock;
        private final int source, partition, offset, stamp, key, headers, value;
        private Row pending;

        Blocks(Iterator<Row> records, String decoder, int perBlock, int[] at) throws Exception {
            this.records = records;
            Map<String, PlainDecoder> made = new HashMap<>();
            this.decoder = TwinRows.twin(made, decoder, PlainDecoder.class);
            this.perBlock = perBlock;
            source = at[0];
            partition = at[1];
            offset = at[2];
            stamp = at[3];
            key = at[4];
            headers = at[5];
            value = at[6];
            pending = records.hasNext() ? records.next() : null;
        }

        @Override
        public boolean hasNext() {
            return pending != null;
        }

        @Override
        public Row next() {
            if (pending == null) throw new NoSuchElementException();
            String topic = pending.getString(source);
            Integer part = pending.isNullAt(partition) ? null : pending.getInt(partition);
            List<Long> offsets = new ArrayList<>();
            List<Long> stamps = new ArrayList<>();
            List<byte[]> keys = new ArrayList<>();
            List<Object> headerLists = new ArrayList<>();
            List<Integer> tombstones = new ArrayList<>();
            long bytes = 0;
            try (TwinRows rows = new TwinRows()) {
                // A block is one topic partition's records: their positions share topic and partition.
                while (pending != null && offsets.size() < perBlock && Objects.equals(topic, pending.getString(source))
                        && Objects.equals(part, pending.isNullAt(partition) ? null : pending.getInt(partition))) {
                    Row r = pending;
                    int number = offsets.size();
                    offsets.add(r.getLong(offset));
                    stamps.add(r.isNullAt(stamp) ? null : r.getLong(stamp));
                    keys.add(r.isNullAt(key) ? null : (byte[]) r.get(key));
                    headerLists.add(r.get(headers));
                    byte[] message = r.isNullAt(value) ? null : (byte[]) r.get(value);
                    Long millis = stamps.get(number);
                    List<Object[]> decoded = message == null ? null : decoder.rows(message, 0, message.length, millis,
                            keys.get(number));
                    if (message == null) {
                        tombstones.add(number);
                        rows.declined(number, NONE);
                    } else if (decoded == null) {
                        rows.declined(number, message);
                    } else {
                        for (Object[] d : decoded) rows.decoded(number, d);
                    }
                    bytes += message == null ? 0 : message.length;
                    pending = records.hasNext() ? records.next() : null;
                }
                // Object arrays: what Spark's row encoder takes for an array column (not java.util.List)
                return RowFactory.create(topic, part, offsets.toArray(new Long[0]), stamps.toArray(new Long[0]),
                        keys.toArray(new byte[0][]), headerLists.toArray(), tombstones.toArray(new Integer[0]),
                        rows.stream((int) Math.min(Integer.MAX_VALUE / 2, bytes * 2)));
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }
}
