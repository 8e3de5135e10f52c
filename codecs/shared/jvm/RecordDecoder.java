package cdcreplay.codecs;

/**
 * A {@link PlainDecoder} for the records of an Avro container file: the JVM twin of a codec's Python
 * {@code ContainerDecoder.rows} for one writer-schema layout ({@code ContainerDecoder.jvm_rows}). A container block
 * holds records back to back with nothing between them, so the reader asks the decoder where each record ends.
 */
public interface RecordDecoder extends PlainDecoder {
    /**
     * Where the record that starts at {@code off} ends (its schemaless bytes are {@code buf[off, end)}), reading no
     * further than {@code limit}; -1 where the bytes there are not a record of the layout the Python reader would
     * read (truncated, an index or length out of range, text that is not UTF-8). The caller then hands the rest of
     * the file to the Python reader, which names what is wrong. {@link #rows} of the same bytes follows at once,
     * so an implementation may keep what this parse found.
     */
    int recordEnd(byte[] buf, int off, int limit);
}
