package cdcreplay.codecs.dts;

import cdcreplay.codecs.PlainDecoder;

import java.util.List;

/**
 * A Kafka record of dts-avro (one schemaless DTS Record, as {@code DtsAvroCodec.decode} reads it) in the JVM: the
 * container twins of both layouts ({@link DtsAvroPlain}), the one whose record ends exactly where the message does.
 * The codec reads the 14 fields and then a trailing bornTimestamp when bytes remain; a 14-field record cannot be read
 * as 15 fields to its end, so trying the 15-field layout first takes the same layout. What neither takes, the Python
 * codec decodes (and names what is wrong).
 */
public final class DtsAvroMessage implements PlainDecoder {
    private final DtsAvroPlain born = new DtsAvroPlain();
    private final DtsAvroPlain record14 = new DtsAvroPlain.Record14();

    @Override
    public List<Object[]> rows(byte[] buf, int off, int len) {
        if (born.recordEnd(buf, off, off + len) == off + len) return born.rows(buf, off, len);
        if (record14.recordEnd(buf, off, off + len) == off + len) return record14.rows(buf, off, len);
        return null;
    }
}
