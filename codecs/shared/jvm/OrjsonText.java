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
}
