package cdcreplay.codecs;

/**
 * JSON text as {@code orjson.dumps} writes it, for the twins' vendor fields: only the quote, the backslash and the
 * control characters escaped (five of them by their short escapes, the others as a lowercase "u00xx" escape);
 * non-ASCII text as it is. Shared by the twins, so that none of them uses another vendor's helpers.
 */
public final class OrjsonText {
    private OrjsonText() {}

    /** {@code s} as a JSON string, appended to {@code out}. */
    public static void quote(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                case '\b': out.append("\\b"); break;
                case '\f': out.append("\\f"); break;
                default:
                    if (c < 0x20) {
                        out.append("\\u00").append(Character.forDigit(c >> 4, 16))
                                .append(Character.forDigit(c & 15, 16));
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }
    /**
     * A parsed JSON value as compact JSON text ({@code jsontext.dumps}: keys in order, no spaces): {@code jsonNull}
     * (the caller's marker of a JSON null) as null, strings quoted as orjson quotes them, objects and lists
     * element by element, anything else (booleans, numbers, a number's literal) as its {@code toString()}.
     */
    @SuppressWarnings("unchecked")
    public static void json(StringBuilder b, Object v, Object jsonNull) {
        if (v == jsonNull) {
            b.append("null");
        } else if (v instanceof String) {
            quote(b, (String) v);
        } else if (v instanceof java.util.Map) {
            b.append('{');
            boolean first = true;
            for (java.util.Map.Entry<String, Object> e : ((java.util.Map<String, Object>) v).entrySet()) {
                if (!first) b.append(',');
                quote(b, e.getKey());
                b.append(':');
                json(b, e.getValue(), jsonNull);
                first = false;
            }
            b.append('}');
        } else if (v instanceof java.util.List) {
            b.append('[');
            boolean first = true;
            for (Object x : (java.util.List<Object>) v) {
                if (!first) b.append(',');
                json(b, x, jsonNull);
                first = false;
            }
            b.append(']');
        } else {
            b.append(v);
        }
    }
}
