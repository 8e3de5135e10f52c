package cdcreplay.codecs;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * MongoDB Extended JSON documents in the document model the Mongo formats share ({@code shared/bson_values.py}):
 * each top-level field as canonical text typed by its BSON type, as {@code debezium_bson.ext_typed} reads it.
 * Every wrapper that function reads is read here; a value it would keep as written (an unknown or malformed
 * {@code $} wrapper) declines, so the codec decides.
 */
final class ExtendedJson {
    private ExtendedJson() {}

    /** A field's BSON type name, canonical text (null: JSON null) and whether it was a bare number. */
    static final class Typed {
        final String type, text;
        final boolean number;

        Typed(String type, String text, boolean number) {
            this.type = type;
            this.text = text;
            this.number = number;
        }

        /** The field's column, {name, type name, JDBC type, number} (bson_values._field_column). */
        Object[] column(String name) {
            return new Object[] {name, type, type.startsWith("binData") ? Integer.valueOf(-3) : JDBC.get(type),
                    number};
        }
    }

    private static final Map<String, Integer> JDBC = Map.of("string", 12, "int32", 4, "int64", -5, "double", 8,
            "decimal128", 3, "bool", 16, "timestamp(3)", 93);
    // bson_values.HEX24 and BASE64 (ShellJson's too)
    static final Pattern HEX24 = Pattern.compile("[0-9a-fA-F]{24}");
    private static final Pattern DECIMAL = Pattern.compile(
            "[+-]?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?");
    private static final Pattern DOUBLE = Pattern.compile("-?[0-9.eE+-]+");
    static final Pattern BASE64 = Pattern.compile(
            "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?");
    private static final Pattern SUBTYPE = Pattern.compile("[0-9a-fA-F]{1,2}");
    private static final Pattern OPTIONS = Pattern.compile("[a-z]*");
    private static final Pattern ISO = Pattern.compile("([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):"
            + "([0-9]{2})(?:\\.([0-9]+))?(Z|[+-][0-9]{2}:?[0-9]{2})");
    private static final BigInteger INT32_MIN = BigInteger.valueOf(Integer.MIN_VALUE),
            INT32_MAX = BigInteger.valueOf(Integer.MAX_VALUE);

    /** A document's fields, in order, each typed as {@link #typed} reads it. */
    static LinkedHashMap<String, Typed> fields(Map<?, ?> doc, Object jsonNull) {
        LinkedHashMap<String, Typed> fields = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : doc.entrySet()) fields.put((String) e.getKey(), typed(e.getValue(), jsonNull));
        return fields;
    }

    /** One value's canonical text and BSON type (ext_typed). */
    @SuppressWarnings("unchecked")
    static Typed typed(Object v, Object jsonNull) {
        if (v == jsonNull) return new Typed("null", null, false);
        if (v instanceof Boolean) return new Typed("bool", v.toString(), false);
        if (v instanceof String) return new Typed("string", (String) v, false);
        if (v instanceof DeclaredJson.Num) {
            String t = ((DeclaredJson.Num) v).text;
            if (!integer(t)) return new Typed("double", t, true);
            BigInteger n = new BigInteger(t);
            return new Typed(int32(n) ? "int32" : "int64", t, true);
        }
        if (v instanceof List) return new Typed("array", json(v, jsonNull), false);
        Map<String, Object> m = (Map<String, Object>) v;
        Iterator<String> keys = m.keySet().iterator();
        String first = keys.hasNext() ? keys.next() : null, second = keys.hasNext() ? keys.next() : null;
        if (m.size() == 1 || m.size() == 2 && ("$binary".equals(first) && "$type".equals(second)
                || "$regex".equals(first) && "$options".equals(second))) {
            Typed w = wrapper(first, m.get(first), m, jsonNull);
            if (w != null) return w;
        }
        for (String k : m.keySet()) if (k.startsWith("$")) throw JsonChecks.DECLINE;  // kept as written: the codec's
        return new Typed("object", json(m, jsonNull), false);
    }

    /** A {"$type": ...} wrapper's value; null for a key that is no wrapper's; declines one the codec keeps as
     *  written (_wrapper's None). */
    @SuppressWarnings("unchecked")
    private static Typed wrapper(String key, Object arg, Map<String, Object> value, Object jsonNull) {
        if (!key.startsWith("$")) return null;
        String text = arg instanceof String ? (String) arg : null;  // a Num is a str to the codec too
        switch (key) {
            case "$oid":
                if (text != null && HEX24.matcher(text).matches()) return new Typed("objectId", text, false);
                break;
            case "$numberLong": case "$numberInt":
                if (text != null && integer(text)) return new Typed(key.equals("$numberLong") ? "int64" : "int32", text,
                        false);
                break;
            case "$numberDouble":
                if (text != null && (DOUBLE.matcher(text).matches() || text.equals("NaN") || text.equals("Infinity")
                        || text.equals("-Infinity"))) {
                    return new Typed("double", text, false);
                }
                break;
            case "$numberDecimal":
                if (text != null && DECIMAL.matcher(text).matches()) return new Typed("decimal128", text, false);
                break;
            case "$date": {
                if (arg instanceof Map && ((Map<String, Object>) arg).size() == 1) {
                    Object ms = ((Map<String, Object>) arg).get("$numberLong");
                    if (!(ms instanceof String && integer((String) ms))) break;
                    return date(new BigInteger((String) ms));
                }
                if (arg instanceof DeclaredJson.Num && integer(((DeclaredJson.Num) arg).text)) {
                    return date(new BigInteger(((DeclaredJson.Num) arg).text));
                }
                String epoch = text == null ? null : isoToEpoch(text);
                if (epoch != null) return new Typed("timestamp(3)", epoch, false);
                break;
            }
            case "$binary": {
                Object data = arg, subtype = value.get("$type");
                if (arg instanceof Map) {
                    data = ((Map<String, Object>) arg).get("base64");
                    subtype = ((Map<String, Object>) arg).get("subType");
                }
                if (data instanceof String && BASE64.matcher((String) data).matches() && subtype instanceof String
                        && SUBTYPE.matcher((String) subtype).matches()) {
                    int n = Integer.parseInt((String) subtype, 16);
                    return new Typed(n == 0 ? "binData" : "binData(" + n + ")", (String) data, false);
                }
                break;
            }
            case "$timestamp": {
                if (!(arg instanceof Map)) break;
                Map<String, Object> ti = (Map<String, Object>) arg;
                Object t = ti.get("t"), i = ti.get("i");
                if (ti.size() == 2 && t instanceof DeclaredJson.Num && i instanceof DeclaredJson.Num
                        && JsonChecks.digits(((DeclaredJson.Num) t).text) && JsonChecks.digits(((DeclaredJson.Num) i).text)) {
                    return new Typed("bsonTimestamp", t + ":" + i, false);
                }
                break;
            }
            case "$regularExpression": {
                if (!(arg instanceof Map)) break;
                Map<String, Object> re = (Map<String, Object>) arg;
                Object pattern = re.get("pattern"), options = re.get("options");
                if (re.size() == 2 && pattern instanceof String && options instanceof String
                        && OPTIONS.matcher((String) options).matches()) {
                    return new Typed("regex", "/" + pattern + "/" + options, false);
                }
                break;
            }
            case "$regex": {
                Object options = value.get("$options");
                if (text != null && options instanceof String && OPTIONS.matcher((String) options).matches()) {
                    return new Typed("regex", "/" + text + "/" + options, false);
                }
                break;
            }
            case "$minKey": return new Typed("minKey", "MinKey", false);
            case "$maxKey": return new Typed("maxKey", "MaxKey", false);
            case "$undefined": return new Typed("undefined", "undefined", false);
            default: break;
        }
        throw JsonChecks.DECLINE;
    }

    /** Whether a bare integer is an int32, as the Java driver reads one (bson_values.INT32_RANGE). */
    static boolean int32(BigInteger n) {
        return n.compareTo(INT32_MIN) >= 0 && n.compareTo(INT32_MAX) <= 0;
    }

    /** A BSON date's milliseconds as epoch seconds with three fraction digits (ms_to_epoch). */
    private static Typed date(BigInteger ms) {
        return new Typed("timestamp(3)", new BigDecimal(ms, 3).toPlainString(), false);
    }

    /** iso_to_epoch: "2023-05-17T09:18:31.439Z" as "1684315111.439" (at least three fraction digits); null for
     *  text that is no such date-time, or an impossible one. */
    static String isoToEpoch(String text) {
        Matcher m = ISO.matcher(text);
        if (!m.matches()) return null;
        int y = Integer.parseInt(m.group(1)), mo = Integer.parseInt(m.group(2)), d = Integer.parseInt(m.group(3));
        int h = Integer.parseInt(m.group(4)), mi = Integer.parseInt(m.group(5)), s = Integer.parseInt(m.group(6));
        long days;
        try {
            if (y < 1) return null;  // Python's date has no year 0
            days = java.time.LocalDate.of(y, mo, d).toEpochDay();
        } catch (java.time.DateTimeException e) {
            return null;
        }
        if (h > 23 || mi > 59 || s > 59) return null;
        String zone = m.group(8);
        long offset = 0;
        if (!zone.equals("Z")) {
            int hh = Integer.parseInt(zone.substring(1, 3)), mm = Integer.parseInt(zone.substring(zone.length() - 2));
            offset = (hh * 3600L + mm * 60L) * (zone.charAt(0) == '-' ? -1 : 1);
        }
        String frac = m.group(7) == null ? "" : m.group(7);
        BigDecimal seconds = BigDecimal.valueOf(days * 86400L + h * 3600L + mi * 60L + s - offset)
                .add(new BigDecimal("0." + (frac.isEmpty() ? "0" : frac)));
        return seconds.setScale(Math.max(3, frac.length()), java.math.RoundingMode.HALF_EVEN).toPlainString();
    }

    private static String json(Object v, Object jsonNull) {
        StringBuilder b = new StringBuilder();
        OrjsonText.json(b, v, jsonNull);
        return b.toString();
    }

    /** -?[0-9]+ (bson_values.INT), ASCII. */
    private static boolean integer(String s) {
        return JsonChecks.integerText(s, Integer.MAX_VALUE);
    }
}
