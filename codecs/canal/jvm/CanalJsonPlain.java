package cdcreplay.codecs.canal;

import cdcreplay.codecs.JsonChecks;
import cdcreplay.codecs.OrjsonText;
import cdcreplay.codecs.PlainDecoder;
import cdcreplay.codecs.TypeFamilies;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * canal-json's decode fast path in the JVM: {@code CanalJsonCodec.plain_rows} (codecs/canal/canal_json.py), test
 * for test, on the Java types Jackson gives. It declines more than the Python fast path where mirroring would
 * be long and the messages are rare: non-ASCII database, table and type names, byte and TIMESTAMP columns of
 * Alibaba messages (ISO-8859-1 bytes, wall-clock text), warnings (pkNames or old naming a column data lacks),
 * fixes of non-scalar values, and any float, big integer or surrogate. The Python codec decodes those.
 */
public final class CanalJsonPlain implements PlainDecoder {
    private static final JsonFactory FACTORY = new JsonFactory();
    private static final Object NULL = new Object();  // JSON null (absent keys are Java null)
    private static final String[] DERIVED_KEYS = {"database", "table", "pkNames", "es", "ts", "id", "mysqlType",
            "sqlType", "type", "isDdl", "sql", "data", "old"};

    private static final class Bail extends RuntimeException {
        Bail() { super(null, null, false, false); }
    }
    private static final Bail BAIL = new Bail();

    /** What a declaration gives every row: the columns field, the names, the two flags, whether Alibaba
     *  messages of it need the Python path (byte or TIMESTAMP columns). */
    private static final class Declared {
        List<Object[]> columns; java.util.Set<String> names; boolean mysqlNamed;
        final List<String> byteColumns = new ArrayList<>();  // binary (width 0) and bit(n) (width in bytes)
        final List<Integer> byteWidths = new ArrayList<>();  // and geometry (width -1)
        final List<String> stampColumns = new ArrayList<>();
    }
    private final HashMap<List<Object>, Declared> cache = new HashMap<>();
    private Object[] lastKey;
    private Declared lastDeclared;
    private static final Object MARK = new Object();  // between the parts of a declaration's cache key

    @Override
    public List<Object[]> rows(byte[] buf, int off, int len) {
        try {
            return decode(buf, off, len);
        } catch (Bail | JsonChecks.Decline | java.io.IOException e) {
            return null;  // not a plain message, or not one this twin is sure of: the Python codec decides
        }
    }

    // ---------------------------------------------------------------------------------------------- parse

    /** orjson's reading of a number: an integer in 64 bits; a float or a bigger integer declines (orjson loses
     *  a float's literal; Python decides). */
    private static Object number(JsonParser p, JsonToken t) throws java.io.IOException {
        if (t != JsonToken.VALUE_NUMBER_INT || p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) throw BAIL;
        return p.getLongValue();
    }

    private static Object read(JsonParser p, JsonToken t) throws java.io.IOException {
        return JsonChecks.tree(p, t, NULL, CanalJsonPlain::number);
    }

    private static Object none(Object v) { return v == NULL ? null : v; }

    @SuppressWarnings("unchecked")
    private static boolean named(Object name) {
        return name instanceof String && !((String) name).isEmpty();
    }

    private static boolean plainRow(Object row) {
        if (!(row instanceof LinkedHashMap)) return false;
        for (Object v : ((Map<String, Object>) row).values()) {
            if (v != NULL && !(v instanceof String)) return false;
        }
        return true;
    }

    // --------------------------------------------------------------------------------------------- decode

    @SuppressWarnings("unchecked")
    private List<Object[]> decode(byte[] raw, int off, int len) throws java.io.IOException {
        JsonChecks.checkRaw(raw, off, len);
        Object root;
        try (JsonParser p = FACTORY.createParser(raw, off, len)) {
            JsonToken t = p.nextToken();
            if (t != JsonToken.START_OBJECT) throw BAIL;
            root = read(p, t);
            if (p.nextToken() != null) throw BAIL;
        }
        Map<String, Object> msg = (Map<String, Object>) root;
        Object kind = none(msg.get("type"));
        // INIT: a full-sync row (op SNAPSHOT), read as an INSERT's row
        if (!("INSERT".equals(kind) || "UPDATE".equals(kind) || "DELETE".equals(kind) || "INIT".equals(kind)))
            throw BAIL;
        Object isDdl = none(msg.get("isDdl"));
        if (isDdl != null && isDdl != Boolean.FALSE) throw BAIL;
        Object database = none(msg.get("database")), table = none(msg.get("table")), es = none(msg.get("es"));
        // A row message without its names is not the plain shape: decode names the missing field (required.py).
        if (!(named(database) && named(table) && JsonChecks.nameFits(database) && JsonChecks.nameFits(table) && es instanceof Long))
            throw BAIL;
        Object pkObj = none(msg.get("pkNames"));
        List<String> pk = new ArrayList<>();
        if (pkObj != null) {
            if (!(pkObj instanceof List)) throw BAIL;
            for (Object k : (List<Object>) pkObj) {
                if (!(k instanceof String)) throw BAIL;
                pk.add((String) k);
            }
        }
        Object dataObj = none(msg.get("data"));
        if (!(dataObj instanceof List) || ((List<Object>) dataObj).isEmpty()) throw BAIL;
        List<Object> data = (List<Object>) dataObj;
        for (Object r : data) if (!plainRow(r)) throw BAIL;
        boolean update = "UPDATE".equals(kind);
        List<Object> olds = null;
        if (update) {
            Object o = none(msg.get("old"));
            if (!(o instanceof List) || ((List<Object>) o).size() != data.size()) throw BAIL;
            olds = (List<Object>) o;
            for (Object r : olds) if (!plainRow(r)) throw BAIL;
        }
        Declared declared = declared(msg, data);
        boolean alibaba = msg.containsKey("id");
        // the non-zero SRIDs of each row's geometry values (data's, then old's), which the vendor data keeps
        List<LinkedHashMap<String, Long>> srids = null;
        if (alibaba && !(declared.byteColumns.isEmpty() && declared.stampColumns.isEmpty())) {
            srids = new ArrayList<>(data.size());
            for (int i = 0; i < data.size(); i++) {
                LinkedHashMap<String, Long> rowSrids = new LinkedHashMap<>();
                alibabaCells((Map<String, Object>) data.get(i), declared, rowSrids);
                if (update) alibabaCells((Map<String, Object>) olds.get(i), declared, rowSrids);
                srids.add(rowSrids);
            }
        }
        String fixes = dataFixes(msg, (Long) es, declared);
        for (String k : pk) if (!declared.names.contains(k)) throw BAIL;  // a warning: Python writes it
        String tableName = (database != null && !((String) database).isEmpty() ? (String) database : "")
                + (database != null && !((String) database).isEmpty() && table != null && !((String) table).isEmpty() ? "." : "")
                + (table != null ? (String) table : "");
        BigDecimal[] sequence = {new BigDecimal((Long) es)};
        List<Object[]> rows = new ArrayList<>(data.size());
        String kindText = (String) kind;
        String opText = "INIT".equals(kind) ? "SNAPSHOT" : kindText;
        for (int i = 0; i < data.size(); i++) {
            Map<String, Object> cells = (Map<String, Object>) data.get(i);
            StringBuilder vendor = new StringBuilder(64).append("{\"type\":");
            OrjsonText.quote(vendor, kindText);
            if (srids != null && !srids.get(i).isEmpty()) {
                vendor.append(",\"srid\":{");
                boolean firstSrid = true;
                for (Map.Entry<String, Long> e : srids.get(i).entrySet()) {
                    if (!firstSrid) vendor.append(',');
                    OrjsonText.quote(vendor, e.getKey());
                    vendor.append(':').append(e.getValue());
                    firstSrid = false;
                }
                vendor.append('}');
            }
            Map<String, String> before = null, after = null;
            if (update) {
                Map<String, Object> old = (Map<String, Object>) olds.get(i);
                LinkedHashMap<String, String> b = image(cells);
                vendor.append(",\"old_keys\":[");
                boolean first = true;
                for (Map.Entry<String, Object> e : old.entrySet()) {
                    if (!cells.containsKey(e.getKey())) throw BAIL;  // a warning: Python writes it
                    b.put(e.getKey(), e.getValue() == NULL ? null : (String) e.getValue());
                    if (!first) vendor.append(',');
                    OrjsonText.quote(vendor, e.getKey());
                    first = false;
                }
                vendor.append(']');
                before = b;
                after = image(cells);
            } else if ("DELETE".equals(kind)) {
                before = image(cells);
            } else {
                after = image(cells);
            }
            if (!fixes.isEmpty()) vendor.append(",\"fix\":[").append(fixes).append(']');
            vendor.append('}');
            rows.add(new Object[] {opText, database, table, tableName, before, after, declared.columns,
                    pk, es, sequence, i, vendor.toString(), i == 0});
        }
        return rows;
    }

    private static LinkedHashMap<String, String> image(Map<String, Object> cells) {
        LinkedHashMap<String, String> m = new LinkedHashMap<>(cells.size() * 2);
        for (Map.Entry<String, Object> e : cells.entrySet()) {
            m.put(e.getKey(), e.getValue() == NULL ? null : (String) e.getValue());
        }
        return m;
    }

    /** _data_fixes(msg, es, declared, ints=True), as the text between the brackets of "fix":[...]. */
    private static String dataFixes(Map<String, Object> msg, long es, Declared declared) {
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, Object> e : msg.entrySet()) {
            String key = e.getKey();
            Object value = e.getValue();
            boolean same;
            switch (key) {
                case "type": case "data": case "old": continue;
                case "database": case "table": same = value != NULL; break;
                case "es": case "ts": same = value instanceof Long && (Long) value == es; break;
                case "id": same = value instanceof Long && (Long) value == 0L; break;
                case "pkNames": same = value == NULL || (value instanceof List && !((List<?>) value).isEmpty()); break;
                case "mysqlType": same = value instanceof Map && declared.mysqlNamed; break;
                case "sqlType": same = value instanceof Map; break;  // orjson ints are canonical
                case "isDdl": same = value == Boolean.FALSE; break;
                case "sql": same = "".equals(value); break;
                default: same = false;
            }
            if (!same) {
                if (out.length() > 0) out.append(',');
                out.append("[[");
                OrjsonText.quote(out, key);
                out.append("],");
                OrjsonText.quote(out, literal(value));
                out.append(']');
            }
        }
        for (String key : DERIVED_KEYS) {
            if (!key.equals("data") && !key.equals("old") && !msg.containsKey(key)) {
                if (out.length() > 0) out.append(',');
                out.append("[[");
                OrjsonText.quote(out, key);
                out.append("],null]");
            }
        }
        return out.toString();
    }

    /** jsontext.dumps of the value as orjson read it: compact JSON, keys in their order. */
    private static String literal(Object v) {
        StringBuilder b = new StringBuilder();
        OrjsonText.json(b, v, NULL);
        return b.toString();
    }

    // --------------------------------------------------------------------------- Alibaba's byte and time text

    /** _bytes_in and _stamps_in of canal_json.py on one row's cells (in place): ISO-8859-1 text of raw bytes
     *  -> base64 (binary, geometry's WKB) or the unsigned integer (bit); wall-clock TIMESTAMP text -> epoch
     *  seconds read as UTC. The non-zero geometry SRIDs go to ``srids``. */
    private static void alibabaCells(Map<String, Object> cells, Declared declared, Map<String, Long> srids) {
        for (int k = 0; k < declared.byteColumns.size(); k++) {
            String name = declared.byteColumns.get(k);
            Object text = cells.get(name);
            if (text == null || text == NULL) continue;
            String t = (String) text;
            byte[] data = new byte[t.length()];
            for (int i = 0; i < t.length(); i++) {
                char c = t.charAt(i);
                if (c > 0xff) throw BAIL;  // not ISO-8859-1: the Python path names the error
                data[i] = (byte) c;
            }
            int width = declared.byteWidths.get(k);
            if (width < 0) {  // geometry: the WKB after the SRID; text (WKT) stays as written
                if (data.length < 9 || (data[4] != 0 && data[4] != 1)) {
                    // text that reads as base64 would come back as other bytes: the Python path dead-letters it
                    if (BASE64.matcher(t).matches()) throw BAIL;
                    continue;
                }
                long srid = (data[0] & 0xffL) | (data[1] & 0xffL) << 8 | (data[2] & 0xffL) << 16 | (data[3] & 0xffL) << 24;
                if (srid != 0) srids.put(name, srid);
                data = Arrays.copyOfRange(data, 4, data.length);
            }
            if (width > 0 && data.length > BIT_BYTES_MAX) throw BAIL;  // MySQL's BIT: at most 64 bits
            cells.put(name, width > 0 ? new java.math.BigInteger(1, data).toString()
                    : java.util.Base64.getEncoder().encodeToString(data));
        }
        for (String name : declared.stampColumns) {
            Object text = cells.get(name);
            if (text == null || text == NULL) continue;
            String epoch = epochText((String) text);
            if (epoch != null) cells.put(name, epoch);
            // epoch-like text would be re-encoded as another instant's wall clock: the Python path dead-letters it
            else if (!WALL_CLOCK.matcher((String) text).matches() && EPOCH_TEXT.matcher((String) text).matches()) {
                throw BAIL;
            }
        }
    }

    private static final Pattern WALL_CLOCK = Pattern.compile(
            "([0-9]{4})-([0-9][0-9])-([0-9][0-9]) ([0-9][0-9]):([0-9][0-9]):([0-9][0-9])(?:\\.([0-9]{1,9}))?");
    private static final Pattern BASE64 = Pattern.compile(
            "([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?");
    private static final Pattern EPOCH_TEXT = Pattern.compile("-?[0-9]+(\\.[0-9]{1,9})?");
    private static final int BIT_BYTES_MAX = 8;
    private static final Pattern BIT_WIDTH = Pattern.compile("\\(\\s*([0-9]+)\\s*\\)");

    /** Wall-clock text as epoch seconds (the written fraction digits kept); null: not a valid wall-clock time. */
    private static String epochText(String text) {
        for (int i = 0; i < text.length(); i++) {
            if (text.charAt(i) > 0x7e) throw BAIL;  // Python's \\d takes other digits too: the Python path
        }
        java.util.regex.Matcher m = WALL_CLOCK.matcher(text);
        if (!m.matches()) return null;
        int y = Integer.parseInt(m.group(1)), mo = Integer.parseInt(m.group(2)), d = Integer.parseInt(m.group(3));
        long days;
        try {
            if (y < 1) return null;  // Python's datetime starts at year 1
            days = java.time.LocalDate.of(y, mo, d).toEpochDay();
        } catch (java.time.DateTimeException e) {
            return null;
        }
        long seconds = days * 86400 + Integer.parseInt(m.group(4)) * 3600L + Integer.parseInt(m.group(5)) * 60L
                + Integer.parseInt(m.group(6));
        String frac = m.group(7);
        return frac == null ? Long.toString(seconds)
                : new BigDecimal(seconds).add(new BigDecimal("0." + frac)).toPlainString();
    }

    // ------------------------------------------------------------------------------------------ declared

    @SuppressWarnings("unchecked")
    private Declared declared(Map<String, Object> msg, List<Object> data) {
        Object mysqlObj = none(msg.get("mysqlType")), sqlObj = none(msg.get("sqlType"));
        if (mysqlObj != null && !(mysqlObj instanceof Map) || sqlObj != null && !(sqlObj instanceof Map)) throw BAIL;
        Map<String, Object> mysql = mysqlObj == null ? Map.of() : (Map<String, Object>) mysqlObj;
        Map<String, Object> sql = sqlObj == null ? Map.of() : (Map<String, Object>) sqlObj;
        // The cache key: every entry of both declarations and the data names, exactly (consecutive messages of a
        // table mostly repeat the last declaration, which is compared before any hashing).
        LinkedHashMap<String, Boolean> dataNames = new LinkedHashMap<>();
        for (Object r : data) for (String k : ((Map<String, Object>) r).keySet()) dataNames.putIfAbsent(k, true);
        Object[] key = new Object[2 * mysql.size() + 2 * sql.size() + dataNames.size() + 2];
        int at = 0;
        for (Map.Entry<String, Object> e : mysql.entrySet()) {
            Object v = e.getValue();
            if (v != NULL && !(v instanceof String)) throw BAIL;
            key[at++] = e.getKey();
            key[at++] = v;
        }
        key[at++] = MARK;
        for (Map.Entry<String, Object> e : sql.entrySet()) {
            if (!(e.getValue() instanceof Long)) throw BAIL;
            key[at++] = e.getKey();
            key[at++] = e.getValue();
        }
        key[at++] = MARK;
        for (String k : dataNames.keySet()) key[at++] = k;
        if (lastDeclared != null && Arrays.equals(key, lastKey)) return lastDeclared;
        Declared hit = cache.get(Arrays.asList(key));
        if (hit != null) {
            lastKey = key;
            lastDeclared = hit;
            return hit;
        }
        LinkedHashMap<String, Boolean> names = new LinkedHashMap<>();
        for (String n : mysql.keySet()) names.putIfAbsent(n, true);
        for (String n : sql.keySet()) names.putIfAbsent(n, true);
        for (String n : dataNames.keySet()) names.putIfAbsent(n, true);
        Declared d = new Declared();
        d.columns = new ArrayList<>();
        d.mysqlNamed = true;
        for (Object v : mysql.values()) if (v == NULL || ((String) v).isEmpty()) d.mysqlNamed = false;
        for (String name : names.keySet()) {
            Object tn = mysql.get(name);
            String typeName = tn == null || tn == NULL ? null : (String) tn;
            Object j = sql.get(name);
            Integer jdbc = null;
            if (j != null) {
                long v = (Long) j;
                if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) throw BAIL;  // columns_fit
                jdbc = (int) v;
            }
            d.columns.add(new Object[] {name, typeName, jdbc, false});
            // byte_columns and the TIMESTAMP columns, which Alibaba messages write as text the decode converts
            String fam = TypeFamilies.family(typeName, jdbc);
            if (TypeFamilies.geometry(typeName)) {
                d.byteColumns.add(name);
                d.byteWidths.add(-1);  // MySQL's value: a 4-byte little-endian SRID, then the WKB
            } else if (fam.equals("binary")) {
                d.byteColumns.add(name);
                d.byteWidths.add(0);
            } else if (fam.equals("bit")) {
                java.util.regex.Matcher m = BIT_WIDTH.matcher(typeName == null ? "" : typeName);
                int width = 1;
                if (m.find()) {
                    if (m.group(1).length() > 9) throw BAIL;
                    width = (Integer.parseInt(m.group(1)) + 7) / 8;
                }
                d.byteColumns.add(name);
                d.byteWidths.add(width);
            } else if (fam.equals("timestamp")) {
                d.stampColumns.add(name);
            }
        }
        d.names = names.keySet();
        if (cache.size() >= 4096) cache.clear();
        cache.put(Arrays.asList(key), d);
        lastKey = key;
        lastDeclared = d;
        return d;
    }
}
