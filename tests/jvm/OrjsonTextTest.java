package cdcreplay.codecs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** OrjsonText writes JSON strings byte for byte as orjson.dumps does (the twins' vendor fields depend on it). */
class OrjsonTextTest {
    private static String quoted(String s) {
        StringBuilder b = new StringBuilder();
        OrjsonText.quote(b, s);
        return b.toString();
    }

    @Test
    void escapesOnlyQuoteBackslashAndControlCharacters() {
        // orjson.dumps('a"b\\c/d') == b'"a\\"b\\\\c/d"': the slash stays as it is
        assertEquals("\"a\\\"b\\\\c/d\"", quoted("a\"b\\c/d"));
        assertEquals("\"\\n\\r\\t\\b\\f\"", quoted("\n\r\t\b\f"));
        // the other control characters as lowercase \\u00xx (orjson.dumps('\x00\x1f\x0b') == b'"\\u0000\\u001f\\u000b"')
        assertEquals("\"\\u0000\\u001f\\u000b\"", quoted("\u0000\u001f\u000b"));
        assertEquals("\"\u007f\"", quoted("\u007f"));  // DEL is not a control character to JSON
    }

    @Test
    void keepsNonAsciiTextAsItIs() {
        assertEquals("\"naïve 表 \uD83D\uDE00\"", quoted("naïve 表 \uD83D\uDE00"));
        assertEquals("\"\"", quoted(""));
    }
}
