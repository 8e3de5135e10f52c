package cdcreplay.jobs;

import cdcreplay.codecs.RecordDecoder;
import org.apache.spark.sql.api.java.UDF3;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Container blocks of an Avro archive file -> the rows of their records as one Arrow IPC stream ({@link TwinRows}):
 * a row per event the codec's JVM twin decoded, a row per record it declined (the record's bytes, for the Python
 * codec), and, where the bytes are not records the twin can tell apart, one row with neither (the number of the
 * record from which the Python reader reads the file instead, naming what is wrong as it does without the JVM).
 * Records are numbered as {@code cdc_jobs.io.files.read_avro} numbers them: 1-based through the file.
 *
 * <p>Arguments: the {@link RecordDecoder} class, the number of the first record, the blocks as the Python reader
 * frames them ({@code cdc_jobs.io.files.read_avro_blocks}): for each block, its record count and data size as
 * big-endian 32-bit ints, then its decompressed data. As fastavro does, a block's records are read from its data
 * and any bytes after them ignored.
 */
public final class AvroBlockDecode implements UDF3<String, Long, byte[], byte[]> {
    private final Map<String, RecordDecoder> decoders = new HashMap<>();

    @Override
    public byte[] call(String decoderClass, Long firstRecord, byte[] blocks) throws Exception {
        if (blocks == null) return null;
        RecordDecoder decoder = TwinRows.twin(decoders, decoderClass, RecordDecoder.class);
        try (TwinRows rows = new TwinRows()) {
            ByteBuffer frame = ByteBuffer.wrap(blocks);
            long record = firstRecord;
            read:
            while (frame.remaining() >= 8) {
                int count = frame.getInt();
                int size = frame.getInt();
                int start = frame.position();
                int limit = start + size;
                if (count < 0 || size < 0 || limit > blocks.length) throw new IllegalArgumentException("bad frame");
                int at = start;
                for (int k = 0; k < count; k++) {
                    int end = decoder.recordEnd(blocks, at, limit);
                    if (end < 0) {
                        rows.takeOver(record);
                        break read;
                    }
                    List<Object[]> decoded = decoder.rows(blocks, at, end - at);
                    if (decoded == null) {
                        rows.declined(record, java.util.Arrays.copyOfRange(blocks, at, end));
                    } else {
                        for (Object[] r : decoded) rows.decoded(record, r);
                    }
                    record++;
                    at = end;
                }
                frame.position(limit);
            }
            TwinRows.countRead(record - firstRecord - 1);
            return rows.stream(blocks.length * 2);
        }
    }
}
