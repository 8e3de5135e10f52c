package cdcreplay.codecs;

import java.math.BigDecimal;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The declared decode's cell conversions ({@code value_conversions} of a declaration): a cell's text as the vendor
 * writes it into the canonical text the codec gives, taken only where the codec's encoder writes that text back as
 * it was; any other spelling declines, and the codec keeps it as a cell fix or names it.
 */
final class CellConversions {
    private CellConversions() {
    }

    /** A cell's text as canonical text: "java_bytes" (Arrays.toString(byte[]) as base64), "local_seconds" and a
     *  UTC offset (wall-clock text at that offset as epoch seconds, the fraction as written). Only the spelling
     *  the codec writes back is taken: any other (unsigned bytes, a "T" between date and time) the codec keeps as
     *  a cell fix. Or ISO-8859-1 text of raw bytes, a character per byte (Alibaba Canal): "latin1_base64" (their
     *  base64), "latin1_unsigned" (a big-endian BIT value of at most 64 bits), "latin1_wkb" (MySQL's geometry: a
     *  little-endian SRID, kept in srids where it is not 0, then the WKB as base64; text that is no such value
     *  stays as written). Or PostgreSQL's text (DRS GaussDB): "pg_hex" (bytea as lower-case hex, to base64),
     *  "pg_bit" (a bit string as its decimal value, as wide as bit(n) says), "pg_zoned" (a timestamptz's offset
     *  "+08", "+05:30" as "+08:00", "+05:30" after a blank). */
    static String convert(String how, String text, String column, String typeName, Map<String, Long> srids) {
        if (how.startsWith("local_seconds")) return localSeconds(text, how.substring("local_seconds".length()));
        if (how.startsWith("latin1_")) return latin1(how, text, column, srids);
        if (how.startsWith("pg_")) return postgres(how, text, typeName);
        if (!how.equals("java_bytes") || text.length() < 2 || text.charAt(0) != '['
                || text.charAt(text.length() - 1) != ']') {
            throw JsonChecks.DECLINE;
        }
        String inner = text.substring(1, text.length() - 1);
        if (inner.isEmpty()) return "";
        String[] parts = inner.split(", ", -1);
        byte[] bytes = new byte[parts.length];
        for (int i = 0; i < parts.length; i++) {
            String p = parts[i];
            if (!JAVA_BYTE.matcher(p).matches()) throw JsonChecks.DECLINE;
            int v = Integer.parseInt(p);
            if (v < -128 || v > 127 || !Integer.toString(v).equals(p)) throw JsonChecks.DECLINE;
            bytes[i] = (byte) v;
        }
        return java.util.Base64.getEncoder().encodeToString(bytes);
    }

    private static final Pattern JAVA_BYTE = Pattern.compile("-?[0-9]{1,3}");
    private static final Pattern LOWER_HEX = Pattern.compile("([0-9a-f]{2})*");
    private static final Pattern BITS = Pattern.compile("[01]+");
    private static final Pattern FIRST_WIDTH = Pattern.compile("\\(([0-9]+)\\)");
    // drs_gaussdb's _PG_ZONED (a timestamptz as PostgreSQL prints it), _CANON_ZONED and _CANON_OFFSET
    private static final Pattern PG_ZONED = Pattern.compile("([0-9]{4,}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"
            + "(?:\\.[0-9]{1,9})?)([+-])([0-9]{2})(?::?([0-9]{2}))?(?::?([0-9]{2}))?");
    private static final Pattern CANON_ZONED = Pattern.compile(
            "([0-9]{4,}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,9})?) (\\S+)");
    private static final Pattern CANON_OFFSET = Pattern.compile("([+-])([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?");

    /** GaussValues._pg_zoned: canonical text as DRS GaussDB writes it back (printable ASCII). */
    private static String pgZoned(String text) {
        java.util.regex.Matcher m = CANON_ZONED.matcher(text);
        if (!m.matches()) return text;
        java.util.regex.Matcher o = CANON_OFFSET.matcher(m.group(2));
        if (!o.matches()) return text;  // a zone id: written as it is
        String minutes = o.group(3), seconds = o.group(4);
        return m.group(1) + o.group(1) + o.group(2) + (!minutes.equals("00") || seconds != null ? ":" + minutes : "")
                + (seconds != null ? ":" + seconds : "");
    }

    /** GaussValues.to_canonical of a text in the spelling GaussValues.from_canonical writes back; any other the
     *  codec keeps as a cell fix, or names. */
    private static String postgres(String how, String text, String typeName) {
        switch (how) {
            case "pg_hex": {
                if (!LOWER_HEX.matcher(text).matches()) throw JsonChecks.DECLINE;  // "\\x", upper case, odd
                byte[] bytes = new byte[text.length() / 2];
                for (int i = 0; i < bytes.length; i++) {
                    bytes[i] = (byte) Integer.parseInt(text.substring(2 * i, 2 * i + 2), 16);
                }
                return java.util.Base64.getEncoder().encodeToString(bytes);
            }
            case "pg_bit": {
                if (!BITS.matcher(text).matches()) throw JsonChecks.DECLINE;  // the codec names it
                java.math.BigInteger value = new java.math.BigInteger(text, 2);
                java.util.regex.Matcher m = FIRST_WIDTH.matcher(typeName == null ? "" : typeName);
                int width = 1;
                if (m.find()) {
                    if (m.group(1).length() > 6) throw JsonChecks.DECLINE;  // no such width: the codec's
                    width = Integer.parseInt(m.group(1));
                }
                String binary = value.toString(2);  // written back zero-filled to the width (str.zfill)
                if (!("0".repeat(Math.max(0, width - binary.length())) + binary).equals(text)) {
                    throw JsonChecks.DECLINE;  // written back otherwise: the codec keeps it as a cell fix
                }
                return value.toString();
            }
            case "pg_zoned": {  // to_canonical; the text taken only where _pg_zoned writes it back as it was
                for (int i = 0; i < text.length(); i++) {
                    if (text.charAt(i) < 0x20 || text.charAt(i) > 0x7e) throw JsonChecks.DECLINE;
                }
                java.util.regex.Matcher m = PG_ZONED.matcher(text);
                String canonical = !m.matches() ? text : m.group(1) + " " + m.group(2) + m.group(3) + ":"
                        + (m.group(4) == null ? "00" : m.group(4)) + (m.group(5) == null ? "" : ":" + m.group(5));
                if (!pgZoned(canonical).equals(text)) throw JsonChecks.DECLINE;  // the codec keeps a cell fix
                return canonical;
            }
            default:
                throw new IllegalArgumentException("unknown conversion " + how);
        }
    }
    private static final Pattern BASE64 = Pattern.compile("([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?");

    private static String latin1(String how, String text, String column, Map<String, Long> srids) {
        byte[] data = new byte[text.length()];
        for (int i = 0; i < data.length; i++) {
            char c = text.charAt(i);
            if (c > 0xff) throw JsonChecks.DECLINE;  // not a byte: the codec names it
            data[i] = (byte) c;
        }
        switch (how) {
            case "latin1_unsigned":
                if (data.length > 8) throw JsonChecks.DECLINE;  // more than MySQL's 64 bits: the codec names it
                return new java.math.BigInteger(1, data).toString();
            case "latin1_wkb":
                if (data.length < 9 || data[4] != 0 && data[4] != 1) {  // not SRID + WKB: text (WKT) stays
                    if (BASE64.matcher(text).matches()) throw JsonChecks.DECLINE;  // would come back as bytes
                    return text;
                }
                long srid = (data[0] & 0xffL) | (data[1] & 0xffL) << 8 | (data[2] & 0xffL) << 16
                        | (data[3] & 0xffL) << 24;
                if (srid != 0) srids.put(column, srid);
                return java.util.Base64.getEncoder().encodeToString(java.util.Arrays.copyOfRange(data, 4, data.length));
            case "latin1_base64":
                return java.util.Base64.getEncoder().encodeToString(data);
            default:
                throw new IllegalArgumentException("unknown conversion " + how);
        }
    }
    private static final Pattern LOCAL = Pattern.compile(
            "([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\\.([0-9]{1,9}))?");
    private static final Pattern EPOCH = Pattern.compile("-?[0-9]+(\\.[0-9]{1,9})?");

    /** drs_json_c.JsonCValues.local_to_epoch at a fixed offset; a zero date and text that is no date-time stay as
     *  written (epoch-like text would be written back as a date: the codec's). */
    private static String localSeconds(String text, String offset) {
        for (int i = 0; i < text.length(); i++) if (text.charAt(i) > 0x7e) throw JsonChecks.DECLINE;
        java.util.regex.Matcher m = LOCAL.matcher(text);
        if (!m.matches()) {
            if (EPOCH.matcher(text).matches() || text.length() > 10 && text.charAt(10) == 'T') {
                throw JsonChecks.DECLINE;
            }
            return text;
        }
        int y = Integer.parseInt(m.group(1)), mo = Integer.parseInt(m.group(2)), d = Integer.parseInt(m.group(3));
        if (y == 0 || mo == 0 || d == 0) return text;  // MySQL's zero date
        if (y < 1000) throw JsonChecks.DECLINE;  // written back unpadded (strftime's %Y)
        long seconds = epochSeconds(m, java.time.ZoneOffset.of(offset));
        String fraction = m.group(7);
        return fraction == null ? Long.toString(seconds)
                : new BigDecimal(seconds).add(new BigDecimal("0." + fraction)).toPlainString();
    }

    /** The epoch seconds of a matched wall-clock date and time (groups 1-6) at an offset; declines what is not a
     *  valid date-time (the codec names it). */
    static long epochSeconds(java.util.regex.Matcher m, java.time.ZoneOffset offset) {
        try {
            return java.time.LocalDateTime.of(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                    Integer.parseInt(m.group(3)), Integer.parseInt(m.group(4)), Integer.parseInt(m.group(5)),
                    Integer.parseInt(m.group(6))).toEpochSecond(offset);
        } catch (java.time.DateTimeException e) {
            throw JsonChecks.DECLINE;
        }
    }
}
