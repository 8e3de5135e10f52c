package cdcreplay.jobs;

import cdcreplay.codecs.PlainDecoder;
import org.apache.spark.sql.api.java.UDF3;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A block of whole lines of an archive file -> the rows of its lines as one Arrow IPC stream: a row per event the
 * codec's declared decode ({@code DeclaredJson}) took, and a row per line it declined (the line's bytes, for the Python
 * codec). The rows go to Python as Arrow columns built here, not as Spark rows: Spark's row conversions of the nested
 * event fields cost more than the decode itself. Lines as the Python reader numbers them ({@code
 * cdc_jobs.io.files.read_lines}): split at "\n", trailing "\r" and "\n" dropped, blank lines skipped but counted.
 * Format-neutral: the caller ({@code cdc_jobs.transforms.jvm_decode}) names the decoder.
 *
 * <p>Arguments: the codec's declaration ({@code jvm_declaration_text}), the number of the block's first line, the
 * block. The stream's columns: {@link TwinRows}, pos_offset being the line number.
 */
public final class LineBlockDecode implements UDF3<String, Long, byte[], byte[]> {
    private final Map<String, PlainDecoder> decoders = new HashMap<>();

    @Override
    public byte[] call(String decoderClass, Long firstLine, byte[] block) throws Exception {
        if (block == null) return null;
        PlainDecoder decoder = TwinRows.twin(decoders, decoderClass, PlainDecoder.class);
        try (TwinRows rows = new TwinRows()) {
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
            TwinRows.countRead(records - 1);
            return rows.stream(block.length * 2);
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
