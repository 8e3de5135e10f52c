package cdcreplay.codecs;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

import java.util.ArrayList;
import java.util.LinkedHashMap;

/**
 * What a JVM decode checks before it trusts Jackson to have read a message as the Python codec's reader
 * ({@code jsontext}, orjson) reads it: the bytes (UTF-8, nesting), the strings (no lone surrogate) and the names
 * the event record takes ({@code contract.name_fits}), and the message's tree read with them. Each check declines
 * (throws {@link #DECLINE}) where the Python side would read otherwise or name an error, so the Python codec
 * decodes that message.
 */
public final class JsonChecks {
    private JsonChecks() {}

    /** Not a message this JVM decode is sure of: the Python codec decides. Thrown without a stack trace. */
    public static final class Decline extends RuntimeException {
        Decline() { super(null, null, false, false); }
    }
    public static final Decline DECLINE = new Decline();
    private static final int MAX_DEPTH = 255;  // jsontext.MAX_DEPTH
    private static final int MAX_NAME = 256;   // contract.MAX_NAME

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long HIGH_BITS = 0x8080808080808080L;

    /** Valid UTF-8 without a byte order mark (Jackson takes some bytes the Python readers refuse). Most messages are
     *  ASCII: eight bytes at a time find the first that is not, and only from there are the sequences read. The
     *  nesting limit and -0 are checked where Jackson reads them ({@link #factory}, {@link #number}). */
    public static void checkRaw(byte[] raw, int off, int len) {
        int n = off + len;
        if (len >= 3 && raw[off] == (byte) 0xEF && raw[off + 1] == (byte) 0xBB && raw[off + 2] == (byte) 0xBF) {
            throw DECLINE;
        }
        int i = off;
        while (i + 8 <= n && ((long) LONGS.get(raw, i) & HIGH_BITS) == 0) i += 8;
        for (; i < n; i++) {
            int b = raw[i];
            if (b >= 0) continue;
            // A multi-byte UTF-8 sequence: no overlong form, no surrogate, nothing above U+10FFFF.
            int c = b & 0xff;
            int more = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 0;
            if (more == 0 || i + more >= n) throw DECLINE;
            int c1 = raw[i + 1] & 0xff;
            if (c == 0xE0 && c1 < 0xA0 || c == 0xED && c1 > 0x9F || c == 0xF0 && c1 < 0x90 || c == 0xF4 && c1 > 0x8F) {
                throw DECLINE;
            }
            for (int k = 1; k <= more; k++) {
                if ((raw[i + k] & 0xC0) != 0x80) throw DECLINE;
            }
            i += more;
        }
    }

    /** A JsonFactory whose parsers refuse (an IOException: the decode declines) nesting deeper than the Python
     *  readers always take: a message of more than MAX_DEPTH brackets they write again with orjson, which writes
     *  at most MAX_DEPTH - 1 levels (the brackets not yet closed). */
    public static JsonFactory factory() {
        return factory(0);
    }

    /** The same for a value read apart from the {@code outer} levels a message holds it in. */
    public static JsonFactory factory(int outer) {
        return JsonFactory.builder().streamReadConstraints(
                StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH - 1 - outer).build()).build();
    }

    /** A number token's literal as written; a bare -0 declines (orjson reads it as 0). */
    public static String number(JsonParser p) throws java.io.IOException {
        String text = p.getText();
        if (text.length() == 2 && text.charAt(0) == '-' && text.charAt(1) == '0') throw DECLINE;
        return text;
    }

    /** A string the Python readers read the same: no unpaired surrogate (only a \\u escape can make one). */
    public static String text(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw DECLINE;
            }
        }
        return s;
    }

    /** A database or table name the event record takes: null, or text of at most MAX_NAME characters without
     *  "/" or ":". Non-ASCII or unprintable text declines (Python's isprintable() decides it). */
    public static boolean nameFits(Object v) {
        if (v == null) return true;
        if (!(v instanceof String)) return false;
        String s = (String) v;
        if (s.length() > MAX_NAME) return false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c > 0x7e || c == '/' || c == ':') throw DECLINE;
        }
        return true;
    }
    /** How a decode reads a number token: its literal, or a long (declining what the Python side reads otherwise). */
    public interface Numbers {
        Object read(JsonParser p, JsonToken t) throws java.io.IOException;
    }

    /** The JSON value at the parser's current token {@code t}: objects as LinkedHashMaps (a duplicate key declines:
     *  the Python readers keep its last value at its first place), arrays as ArrayLists, strings checked by
     *  {@link #text}, numbers as {@code numbers} reads them, true/false as Booleans, null as {@code jsonNull}. */
    public static Object tree(JsonParser p, JsonToken t, Object jsonNull, Numbers numbers) throws java.io.IOException {
        switch (t) {
            case START_OBJECT: {
                LinkedHashMap<String, Object> m = new LinkedHashMap<>();
                for (JsonToken k = p.nextToken(); k != JsonToken.END_OBJECT; k = p.nextToken()) {
                    String name = text(p.currentName());
                    if (m.put(name, tree(p, p.nextToken(), jsonNull, numbers)) != null) throw DECLINE;
                }
                return m;
            }
            case START_ARRAY: {
                ArrayList<Object> a = new ArrayList<>();
                for (JsonToken k = p.nextToken(); k != JsonToken.END_ARRAY; k = p.nextToken()) {
                    a.add(tree(p, k, jsonNull, numbers));
                }
                return a;
            }
            case VALUE_STRING: return text(p.getText());
            case VALUE_NUMBER_INT: case VALUE_NUMBER_FLOAT: return numbers.read(p, t);
            case VALUE_TRUE: return Boolean.TRUE;
            case VALUE_FALSE: return Boolean.FALSE;
            case VALUE_NULL: return jsonNull;
            default: throw DECLINE;  // embedded objects
        }
    }

    /** The one JSON value a parser reads, as {@link #tree} reads it; declines no value (empty text) and anything
     *  after the value. Closes the parser. */
    public static Object whole(JsonParser p, Object jsonNull, Numbers numbers) throws java.io.IOException {
        try (JsonParser q = p) {
            JsonToken t = q.nextToken();
            if (t == null) throw DECLINE;
            Object v = tree(q, t, jsonNull, numbers);
            if (q.nextToken() != null) throw DECLINE;
            return v;
        }
    }

    /** Whether a text is an optional minus sign and 1 to {@code most} ASCII digits (-?[0-9]{1,most}), read without
     *  a regex matcher per value. */
    static boolean integerText(String s, int most) {
        int from = !s.isEmpty() && s.charAt(0) == '-' ? 1 : 0;
        return s.length() - from <= most && digits(s, from);
    }

    static boolean digits(String s) {
        return digits(s, 0);
    }

    /** Whether {@code s} from {@code from} on is one or more ASCII digits. */
    static boolean digits(String s, int from) {
        if (s.length() <= from) return false;
        for (int i = from; i < s.length(); i++) if (s.charAt(i) < '0' || s.charAt(i) > '9') return false;
        return true;
    }
}
