package cdcreplay.codecs;

import java.util.List;

/**
 * A decode of line messages in the JVM ({@link DeclaredJson}, driven by a codec's declaration), for the messages
 * it can decode exactly (the rest it declines, and the Python codec decodes them and names their errors).
 *
 * <p>Pure Java and Jackson: no Spark. {@code cdc_jobs.jvm} builds it with the job side's adapter
 * ({@code LineRows}); {@code tests/codecs/test_jvm_fast_paths.py} holds it equal to the codecs' decode,
 * row for row.
 */
public interface PlainDecoder {
    /** Names of the values of one row, in order (the DECODED fields a fast path sets; the rest are constant). A row
     *  may leave off the last ones, transaction_id and schema (null), replaces_row (false) and removed_columns
     *  (a List of names; none: empty). */
    String[] FIELDS = {"op", "database", "table", "table_name", "before", "after", "columns", "primary_key",
            "event_time_ms", "sequence", "pos_index", "vendor", "first_of_record", "transaction_id", "schema",
            "replaces_row", "removed_columns"};

    /**
     * The rows of the message in {@code buf[off, off + len)}, each an Object[] in {@link #FIELDS} order:
     * images as insertion-ordered {@code java.util.Map<String, String>} (a null value is SQL NULL, a missing key is
     * "not in this image"), {@code columns} as a list of {name, type_name, jdbc_type, number} arrays that the
     * rows of one declaration share, {@code sequence} as a {@code java.math.BigDecimal[]}. Null: not a message
     * this decode takes.
     */
    List<Object[]> rows(byte[] buf, int off, int len);

    /** The rows of a Kafka record's message, whose timestamp ({@code recordMillis}, null: none) an encoder may
     *  write (DRS's {@code ts}). */
    default List<Object[]> rows(byte[] buf, int off, int len, Long recordMillis) {
        return rows(buf, off, len);
    }

    /** The same, with the record's key ({@code key}, null: none), which a format may name the primary key by. */
    default List<Object[]> rows(byte[] buf, int off, int len, Long recordMillis, byte[] key) {
        return rows(buf, off, len, recordMillis);
    }
}
