package cdcreplay.codecs;

import java.math.BigInteger;
import java.time.LocalDate;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Kafka Connect schema a JsonConverter message carries beside its payload ({@code schemas.enable=true}), read for
 * the declared decode ({@link DeclaredJson}, a declaration's {@code connect_schema}): the images' columns, their
 * declared types and how each column's cells become canonical text. A table's messages repeat one schema (most of
 * each message), so a schema is read once per distinct text: the decode compares the message's schema bytes with
 * the recent ones' before it reads any.
 *
 * <p>A cell is taken where it is written in the one spelling its conversion writes back (the codec's rule: a
 * conversion is kept only where it re-encodes to the exact cell): Decimal and VariableScaleDecimal (base64 of the
 * unscaled two's complement), the epoch counts of dates, times and time stamps, ISO-8601 zoned time stamps and times
 * (and an instant column's, as epoch seconds), bit strings. Any other cell (geometries, a cell written otherwise
 * than its field says) declines the message: the codec keeps how it was written.
 */
final class ConnectSchema {
    /** A column's field: how its cells are read ({@code kind}), its declared type and JDBC type, Decimal's scale. */
    static final class Field {
        final String kind, typeName;
        final Integer jdbc;
        final Integer scale, length;  // Decimal's scale, Bits' length (null: none an integer is read from)

        Field(String kind, String typeName, Integer jdbc, Integer scale, Integer length) {
            this.kind = kind;
            this.typeName = typeName;
            this.jdbc = jdbc;
            this.scale = scale;
            this.length = length;
        }
    }

    /** The codec's tables (its declaration's {@code connect_schema}). */
    static final class Rules {
        final List<String> images;  // the struct fields whose fields are the images' columns, in order
        final String sourceType;    // the parameter naming the column's declared source type
        final Map<String, String> logicalKinds = new HashMap<>(), plainKinds = new HashMap<>();
        final Map<String, Integer> logicalJdbc = new HashMap<>(), connectJdbc = new HashMap<>();
        final String decimal;  // the logical kind whose type name is decimal(precision,scale) where the source has none
        final String precision;  // its precision parameter
        // an instant: the logical kind whose cells are read as epoch seconds where the source type is of this family
        final String zoned, instantFamily, instant;

        @SuppressWarnings("unchecked")
        Rules(Map<String, Object> d) {
            images = (List<String>) (List<?>) d.get("images");
            sourceType = (String) d.get("source_type");
            ((Map<String, Object>) d.get("logical_kinds")).forEach((k, v) -> logicalKinds.put(k, (String) v));
            ((Map<String, Object>) d.get("plain_kinds")).forEach((k, v) -> plainKinds.put(k, (String) v));
            ((Map<String, Object>) d.get("logical_jdbc")).forEach((k, v) -> logicalJdbc.put(k, code(v)));
            ((Map<String, Object>) d.get("connect_jdbc")).forEach((k, v) -> connectJdbc.put(k, code(v)));
            decimal = (String) d.get("decimal");
            precision = (String) d.get("precision");
            List<String> instants = (List<String>) (List<?>) d.get("instants");
            zoned = instants.get(0);
            instantFamily = instants.get(1);
            instant = instants.get(2);
        }

        private static Integer code(Object number) {
            return Integer.valueOf(number.toString());
        }
    }

    final byte[] bytes;  // the schema's text as the message writes it
    final Object tree;   // the schema read (what a message without an envelope keeps as a key of its own)
    final String text;   // its JSON text as the codec keeps it (json_fix.literal)
    String vendorText;   // ,"<key>":"<text, quoted>": what each row's vendor data holds of it, written once
    final LinkedHashMap<String, Field> fields = new LinkedHashMap<>();

    /** The schema in {@code tree}, read from {@code bytes}; declines a schema the codec names a problem of. */
    @SuppressWarnings("unchecked")
    ConnectSchema(byte[] bytes, Object tree, Object jsonNull, Rules rules) {
        if (!wellFormed(tree, jsonNull, 0)) throw JsonChecks.DECLINE;
        this.bytes = bytes;
        this.tree = tree;
        StringBuilder b = new StringBuilder(bytes.length);
        OrjsonText.json(b, tree, jsonNull);
        text = b.toString();
        for (String image : rules.images) {  // _image_fields: before's fields, then after's
            for (Object f : list(((Map<String, Object>) tree).get("fields"))) {
                if (!(f instanceof Map) || !image.equals(((Map<String, Object>) f).get("field"))) continue;
                for (Object c : list(((Map<String, Object>) f).get("fields"))) {
                    if (!(c instanceof Map)) continue;
                    Map<String, Object> column = (Map<String, Object>) c;
                    if (column.get("field") instanceof String) {
                        fields.put((String) column.get("field"), field(column, rules));
                    }
                }
            }
        }
    }

    private static List<Object> list(Object v) {
        return v instanceof List ? (List<Object>) v : List.of();
    }

    /** _expected_kind and _declared_columns of one field. */
    @SuppressWarnings("unchecked")
    private static Field field(Map<String, Object> f, Rules rules) {
        Object p = f.get("parameters");
        Map<String, Object> params = p instanceof Map ? (Map<String, Object>) p : Map.of();
        String name = f.get("name") instanceof String ? (String) f.get("name") : null;
        String type = f.get("type") instanceof String ? (String) f.get("type") : null;
        String logical = rules.logicalKinds.get(name == null ? "" : name);
        String kind = logical != null ? logical : rules.plainKinds.getOrDefault(type, "str");
        Object source = params.get(rules.sourceType);
        if (kind.equals(rules.zoned) && rules.instantFamily.equals(TypeFamilies.family(
                source instanceof String ? (String) source : null, null))) {
            kind = rules.instant;
        }
        String typeName = source instanceof String && !((String) source).isEmpty() ? (String) source
                : name != null && !name.isEmpty() ? name : type;  // Python's `or`: the last one as it is
        Integer jdbc = logical != null ? rules.logicalJdbc.get(logical)
                : type == null ? null : rules.connectJdbc.get(type);
        Object scaleText = params.get("scale");
        if (logical != null && logical.equals(rules.decimal) && scaleText != null && typeName != null
                && typeName.equals(name)) {
            Object precision = params.get(rules.precision);
            if (precision instanceof String && !((String) precision).isEmpty()) {
                typeName = "decimal(" + precision + "," + scaleText + ")";
            }
        }
        Integer scale = null;
        if (scaleText instanceof String && ((String) scaleText).matches("-?[0-9]{1,4}")) {
            scale = Integer.valueOf((String) scaleText);
        }
        Object lengthText = params.getOrDefault("length", "0");
        Integer length = lengthText instanceof String && ((String) lengthText).matches("-?[0-9]{1,6}")
                ? Integer.valueOf((String) lengthText) : null;
        return new Field(kind, typeName, jdbc, scale, length);
    }

    /** connect_schema.schema_problem found nothing: an object whose type, name, doc and field are strings, optional a
     *  boolean, version an integer, parameters an object of strings, fields a list of such objects and items, keys and
     *  values such objects, at most 64 levels deep. */
    @SuppressWarnings("unchecked")
    private static boolean wellFormed(Object node, Object jsonNull, int depth) {
        if (!(node instanceof Map) || depth > 64) return false;
        Map<String, Object> m = (Map<String, Object>) node;
        for (String key : new String[] {"type", "name", "doc", "field"}) {
            if (m.containsKey(key) && !(m.get(key) instanceof String)) return false;
        }
        if (m.containsKey("optional") && !(m.get("optional") instanceof Boolean)) return false;
        Object version = m.get("version");
        if (version != null && version != jsonNull && !(version instanceof DeclaredJson.Num
                && ((DeclaredJson.Num) version).text.matches("-?[0-9]+"))) {
            return false;
        }
        Object params = m.get("parameters");
        if (params != null && params != jsonNull) {
            if (!(params instanceof Map)) return false;
            for (Object v : ((Map<String, Object>) params).values()) if (!(v instanceof String)) return false;
        }
        Object fields = m.get("fields");
        if (fields != null && fields != jsonNull) {
            if (!(fields instanceof List)) return false;
            for (Object f : (List<Object>) fields) {
                if (!(f instanceof Map) || !(((Map<String, Object>) f).get("field") instanceof String)) return false;
                if (!wellFormed(f, jsonNull, depth + 1)) return false;
            }
        }
        for (String key : new String[] {"items", "keys", "values"}) {
            Object v = m.get(key);
            if (v != null && v != jsonNull && !wellFormed(v, jsonNull, depth + 1)) return false;
        }
        return true;
    }

    /** Whether the message's schema is this one: the same bytes. */
    boolean is(byte[] raw, int from, int to) {
        return Arrays.equals(raw, from, to, bytes, 0, bytes.length);
    }

    // ------------------------------------------------------------------------------------------- cells by kind

    private static final Base64.Encoder BASE64 = Base64.getEncoder();
    private static final Base64.Decoder UNBASE64 = Base64.getDecoder();

    /** _quick_decimal: the text of a Decimal cell written as the encoder writes it back (base64 of the minimal two's
     *  complement), else null. */
    static String decimal(Object value, Integer scale) {
        if (!(value instanceof String) || scale == null) return null;
        String b64 = (String) value;
        if (b64.isEmpty() || b64.length() > 1200) return null;  // empty bytes; beyond the digits Python writes
        byte[] data;
        try {
            data = UNBASE64.decode(b64);
        } catch (IllegalArgumentException e) {
            return null;
        }
        if (data.length == 0) return null;
        BigInteger n = new BigInteger(data);
        if (!BASE64.encodeToString(n.toByteArray()).equals(b64)) return null;  // another spelling of the bytes
        String digits = n.abs().toString();
        String sign = n.signum() < 0 ? "-" : "";
        if (scale <= 0) return n.signum() == 0 ? "0" : sign + digits + "0".repeat(-scale);
        if (digits.length() < scale + 1) digits = "0".repeat(scale + 1 - digits.length()) + digits;
        return sign + digits.substring(0, digits.length() - scale) + "." + digits.substring(digits.length() - scale);
    }

    /** _quick_units: the text of an epoch count (days; time or time stamp in units of 10^-digits s) written as a
     *  canonical integer, else null (outside the calendar too). */
    static String units(Object value, String kind) {
        if (!(value instanceof DeclaredJson.Num)) return null;
        String text = ((DeclaredJson.Num) value).text;
        if (!canonicalInteger(text)) return null;
        long n = Long.parseLong(text);
        if (kind.equals("date")) {
            return date(n);
        }
        return stamp(n, kind.charAt(kind.length() - 1) - '0', kind.startsWith("time"));
    }

    /** _datetime_text (or, {@code time}, _time_text) of a count of 10^-digits seconds. */
    private static String stamp(long n, int digits, boolean time) {
        long perSec = digits == 3 ? 1_000L : digits == 6 ? 1_000_000L : 1_000_000_000L;
        StringBuilder b = new StringBuilder(32);
        long secs, frac;
        if (time) {
            if (n == Long.MIN_VALUE) return null;
            if (n < 0) b.append('-');
            secs = Math.abs(n) / perSec;
            frac = Math.abs(n) % perSec;
        } else {
            long per = 86_400L * perSec;
            String day = date(Math.floorDiv(n, per));
            if (day == null) return null;
            b.append(day).append(' ');
            long rem = Math.floorMod(n, per);
            secs = rem / perSec;
            frac = rem % perSec;
        }
        long h = secs / 3600, m = secs % 3600 / 60, s = secs % 60;
        if (h < 10) b.append('0');
        b.append(h).append(':');
        if (m < 10) b.append('0');
        b.append(m).append(':');
        if (s < 10) b.append('0');
        b.append(s);
        if (frac != 0) {  // _fraction: the digits zero-padded, trailing zeros dropped
            String f = Long.toString(frac);
            f = "0".repeat(digits - f.length()) + f;
            int end = f.length();
            while (f.charAt(end - 1) == '0') end--;
            b.append('.').append(f, 0, end);
        }
        return b.toString();
    }

    private static final String TIME = "([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\\.([0-9]{1,9}))?";
    private static final String ZONE = "(Z|[+-][0-9]{2}:[0-9]{2}(?::[0-9]{2})?)";
    private static final Pattern ZONED = Pattern.compile("([0-9]{4,})-([0-9]{2})-([0-9]{2})T" + TIME + ZONE);
    private static final Pattern ZONED_TIME = Pattern.compile(TIME + ZONE);

    /** A ZonedTimestamp's (or, {@code time}, ZonedTime's) ISO text as "date time offset" (Z: +00:00); null for
     *  "+00:00", which is written back as Z. */
    static String zoned(Object value, boolean time) {
        if (!(value instanceof String)) return null;
        String v = (String) value;
        Matcher m = (time ? ZONED_TIME : ZONED).matcher(v);
        if (!m.matches()) return null;
        String zone = m.group(m.groupCount());
        if (zone.equals("+00:00")) return null;
        int t = v.indexOf('T');
        String at = time ? v.substring(0, v.length() - zone.length())
                : v.substring(0, t) + " " + v.substring(t + 1, v.length() - zone.length());
        return at + " " + (zone.equals("Z") ? "+00:00" : zone);
    }

    /** An instant's UTC ISO text as epoch seconds, with its fraction's digits; null where the text is not the one
     *  written back (Z, the time of day's fields in range, no trailing zero in the fraction, years 1-9999). */
    static String instant(Object value) {
        if (!(value instanceof String)) return null;
        Matcher m = ZONED.matcher((String) value);
        // years 1-9999 (Python's dates); "+00:00" is written back as Z
        if (!m.matches() || !m.group(8).equals("Z") || m.group(1).length() > 4 || m.group(1).equals("0000")) {
            return null;
        }
        long days;
        try {
            days = LocalDate.of(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                    Integer.parseInt(m.group(3))).toEpochDay();
        } catch (java.time.DateTimeException e) {
            return null;
        }
        String fraction = m.group(7) == null ? "" : m.group(7);
        long seconds = days * 86_400L + Integer.parseInt(m.group(4)) * 3600L + Integer.parseInt(m.group(5)) * 60L
                + Integer.parseInt(m.group(6));
        BigInteger units = BigInteger.valueOf(seconds).multiply(BigInteger.valueOf(1_000_000_000L))
                .add(new BigInteger((fraction + "000000000").substring(0, 9)));
        if (units.bitLength() > 62) return null;  // beyond the stamps a long counts in nanoseconds
        String wall = stamp(units.longValue(), 9, false);
        if (wall == null || !(wall.replace(' ', 'T') + "Z").equals(value)) return null;
        return new java.math.BigDecimal(units, 9).setScale(fraction.length()).toPlainString();
    }

    /** VariableScaleDecimal's {"scale", "value"}: the value at its scale, where the text gives that scale back. */
    @SuppressWarnings("unchecked")
    static String variableDecimal(Object value) {
        if (!(value instanceof Map) || ((Map<String, Object>) value).size() != 2) return null;
        Object scale = ((Map<String, Object>) value).get("scale");
        if (!(scale instanceof DeclaredJson.Num) || !((DeclaredJson.Num) scale).text.matches("0|[1-9][0-9]{0,3}")) {
            return null;  // a negative scale's text has none
        }
        return decimal(((Map<String, Object>) value).get("value"), Integer.valueOf(((DeclaredJson.Num) scale).text));
    }

    /** Bits: the little-endian number of the base64 bytes, where its bytes (at least the length's) give them back. */
    static String bits(Object value, Integer length) {
        if (!(value instanceof String) || length == null || ((String) value).length() > 1200) return null;
        byte[] data;
        try {
            data = UNBASE64.decode((String) value);
        } catch (IllegalArgumentException e) {
            return null;
        }
        byte[] big = new byte[data.length + 1];
        for (int i = 0; i < data.length; i++) big[data.length - i] = data[i];
        BigInteger n = new BigInteger(big);  // unsigned: a leading zero byte
        int size = Math.max(Math.max((length + 7) / 8, (n.bitLength() + 7) / 8), 1);
        byte[] out = new byte[size];
        byte[] be = n.toByteArray();
        for (int i = 0; i < size && i < be.length; i++) out[i] = be[be.length - 1 - i];
        if (!BASE64.encodeToString(out).equals(value)) return null;
        return n.toString();
    }

    /** date.fromordinal(EPOCH_ORDINAL + days).isoformat(), or null outside years 1-9999. */
    private static String date(long days) {
        if (days < -719_162L || days > 2_932_896L) return null;  // 0001-01-01 .. 9999-12-31
        return LocalDate.ofEpochDay(days).toString();
    }

    /** 0|-?[1-9][0-9]* of at most 18 digits (a long). */
    private static boolean canonicalInteger(String s) {
        int from = !s.isEmpty() && s.charAt(0) == '-' ? 1 : 0;
        int n = s.length() - from;
        if (n < 1 || n > 18) return false;
        if (s.charAt(from) == '0') return n == 1 && from == 0;
        for (int i = from; i < s.length(); i++) if (s.charAt(i) < '0' || s.charAt(i) > '9') return false;
        return true;
    }
}
