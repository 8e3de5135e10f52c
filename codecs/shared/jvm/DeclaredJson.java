package cdcreplay.codecs;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The one JVM decode of JSON row messages, driven by a codec's declaration ({@code shared/declared_rows.py}) instead
 * of a twin written per format. A declaration says where the roles are read (op, names, images, key, time,
 * sequence, transaction, tenant) and what the encoder writes at each key it compares ({@code writes}, in the
 * encoder's order). The decode takes a message of one row whose cells are bare numbers, strings or null, builds
 * the rows the codec's {@code decode} gives, and keeps as vendor fixes where the message differs from what the
 * encoder writes, as {@code json_fix.derive_fix} does. Anything else it declines and the Python codec decodes:
 * other shapes and ops, declined keys, booleans or JSON in cells, a column written both as a number and as text,
 * names or numbers the record does not take.
 *
 * <p>A row message may come inside a Kafka Connect envelope whose schema declares the columns and how each cell is
 * converted ({@code envelope}, {@code connect_schema}: {@link ConnectSchema}), be positioned as its connector writes
 * positions ({@code positions}) and take its key's names from the Kafka record's key ({@code record_key_names}).
 */
public final class DeclaredJson implements PlainDecoder {
    private static final JsonFactory FACTORY = JsonChecks.factory();
    private static final JsonFactory INSIDE = JsonChecks.factory(1);  // a value read apart from its message's object
    static final Object NULL = new Object();     // JSON null
    private static final Object MISSING = new Object();  // no such key (in the message, or in what is written)
    private static final Object OBJECT = new Object();  // what is written there is an object (leaf_paths)
    static final BigDecimal[] NO_SEQUENCE = new BigDecimal[0];
    // GoldenGate's op_ts: "YYYY-MM-DD HH:MM:SS[.fraction]", UTC
    private static final Pattern STAMP = Pattern.compile(
            "([0-9]{4})-([0-9]{2})-([0-9]{2})[ T]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\\.([0-9]{1,9}))?");
    // OMS SharePlex's meta.time: "YYYY-MM-DDTHH:MM:SS", UTC
    private static final Pattern STAMP_SECONDS = Pattern.compile(
            "([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})");

    /** A bare JSON number: its literal, as jsontext keeps it. */
    static final class Num {
        final String text;
        Num(String text) { this.text = text; }
        @Override public String toString() { return text; }
    }

    /** What one message says, in canonical terms: what the renderings of {@code writes} are made from. */
    private static final class Row {
        String op, database, schema, table, tenant, txn;
        Long ms;
        BigDecimal[] sequence = NO_SEQUENCE;
        List<String> key = new ArrayList<>();
        Map<String, String> before, after;
        List<Object[]> columns = List.of();
        boolean listsHidden;  // a DELETE's rows on the main side, the other list uncompared (delete_hides_other)
        String vendorOp;  // the op as the message writes it (op_in_vendor)
        // documents: the document strings the images were read from (written back as they are), whether a
        // change's before is its record key's, and an UPDATE's description of its changes as the encoder writes it
        String beforeDocument, afterDocument;
        boolean beforeFromKey, replaces;  // replaces: an UPDATE's after is the whole row (replaces_row)
        Map<String, Object> description;
        // shell_documents: the document texts and the record type read, which the encoder writes back as they are
        String valueText, whereText, recordType;
        List<String> removed;  // removed_columns: fields an update removes from the document ($unset)
    }

    private final String[] opPath;
    private final Map<String, String> ops = new HashMap<>();
    private final Map<String, String> opValues = new HashMap<>();  // op -> the vendor value the encoder writes
    // role -> its key paths: the first that the message has (not null) is read ("a|b" in the declaration)
    private final Map<String, String[][]> reads = new HashMap<>();
    private final Map<String, String> kinds = new HashMap<>();
    private final List<String> imageRoles = new ArrayList<>();
    private final List<String[]> imagePaths = new ArrayList<>();
    private final Map<String, String> imageRoleAt = new HashMap<>();  // an image's key path -> its role
    private final LinkedHashMap<String, String> writes = new LinkedHashMap<>();  // key path -> rendering
    private final Map<String, Map<String, String>> writesUnder = new HashMap<>();  // key -> sub key -> rendering
    private final Set<String> nested = new HashSet<>(), declined = new HashSet<>();
    private final Set<String> tenantTypes = new HashSet<>();
    private final String keySeparator;
    private final boolean nullCellsDeclare, sequenceFromSeconds, databaseRequired, unwrittenImages;
    private final String qualifiedTable;  // the table role names the database too: "one_dot" or "first_dot"
    // column types inside the images (image_types): the key holding them, the member of a type's name, the vendor
    // key of the images whose types object differs from what the columns give, those images' keys in its order
    private final String typesKey, typeMember, typesVendor;
    private final List<String> typesOrder = new ArrayList<>();
    private final Map<String, Object> constants = new HashMap<>();  // "=<JSON>" renderings, parsed
    private final Map<String[], List<Object>> requires = new HashMap<>();  // key path -> its values besides null
    // images that are lists of rows: "rows", "row_befores", "row_changes" (an UPDATE's changed columns, per row)
    private final String rowsKey, rowBeforesKey, rowChangesKey;
    private final String deleteMain;  // the list a DELETE's rows are documented in: "rows" or "row_befores"
    private final String deleteInVendor;  // the vendor key naming the other list where a DELETE's rows were
    private final boolean deleteHidesOther;  // rows in the main list: the other goes uncompared (DRS)
    // the codec's required fields per op value: [path, JSON types, non-empty] (shared/required.py)
    private final Map<String, List<Object[]>> needs = new HashMap<>();
    // leaf_paths: fixes down to the first non-object on either side; the written keys under each object path
    private final boolean leafPaths;
    private final Map<String, LinkedHashSet<String>> children = new HashMap<>();
    private final Set<String> imageParents = new HashSet<>();  // an image's object: {"data": {...}} (leaf_paths)
    private final boolean columnsExact;  // the images hold exactly the columns column_specs declares
    private final String sequenceNone;  // the text a message writes for "no sequence" (OMS DataWorks: "null")
    // names_stripped: a name with blanks around declines, an empty database is none (DRS); types_complete: every
    // column has a type name and a code; fix_keys: a fix names its top-level key (DRS's header fixes)
    private final boolean namesStripped, typesComplete, fixKeys;
    private final Set<String> declineFamilies = new HashSet<>();  // a column of these type families declines
    private final Map<String, String> conversions = new HashMap<>();  // type family -> how its text is canonical
    private final String conversionsWhen;  // a key whose presence turns the conversions on (Alibaba Canal's id)
    private final boolean familyByNameThenCode;  // a type name no family matches falls back to its code (Canal)
    private final String opInVendor;  // the vendor key that keeps the op as written (Canal's type: INIT, INSERT)
    private final boolean keyDeclared;  // every key column is a declared column (the codec warns otherwise)
    private final boolean convertNumbers;  // a bare number's literal is converted as text too (Canal's cells)
    private final Map<List<Object>, List<Object[]>> columnLists = new HashMap<>();
    private final boolean schemaLevel;  // the schema is a level of its own: database.schema.table (GaussDB)
    // jdbc_by_name: a column's JDBC type from its type name's base, else the first rule it matches ({suffix or
    // prefix, text, code}), not the message's codes; codes_by_name: the codes the encoder writes by that base
    private final Map<String, Integer> jdbcByName = new HashMap<>(), codesByName = new HashMap<>();
    private final List<Object[]> jdbcNameRules = new ArrayList<>();
    // envelope: the row message may be wrapped at envelopeKey beside a schema at envelopeSchema (Kafka Connect's
    // JsonConverter); it is where the message has that key and none of bareKeys. How it was (envelopeVendor:
    // "schema", "payload", "bare") and the schema's text are vendor data.
    private final String envelopeKey, envelopeSchema, envelopeVendor;
    private final Set<String> bareKeys = new HashSet<>();
    private final ConnectSchema.Rules connect;  // the envelope's schema declares the images' columns
    private final List<ConnectSchema> recentSchemas = new ArrayList<>(8);
    private final byte[] schemaOpening, payloadOpening;  // {"<schema>": and ,"<key>": as a converter writes them
    // positions: the sequence from the position a connector writes in one object (positionsAt), by the rule of
    // the connector the object names (connectorKey), or for a nameless one the first rule whose keys it has; then
    // the integer at thenKey
    private final String[] positionsAt;
    private final String connectorKey, thenKey;
    private final List<Object[]> positionRules = new ArrayList<>();  // {how, connectors, nameless key sets, keys}
    private final boolean recordKeyNames;  // the primary key is the record key's names: a record with one declines
    // documents: the images are MongoDB Extended JSON document strings (ExtendedJson); an UPDATE without an after
    // document has its changes in an object (docChanges: updated fields as a document string, removed field names,
    // truncated arrays); the strings are kept at vendor[docVendor]; the document key is docId, which the record
    // key's member keyMember holds as Extended JSON
    private final String docVendor, docChanges, docUpdated, docRemoved, docTruncated, docId, keyMember;
    // shell_documents: the images are MongoDB shell-JSON document strings (ShellJson): the document at shellValue,
    // an update's key at shellWhere, the kind of change at shellRecordType (kept as vendor data), the key field shellId
    private final String shellValue, shellWhere, shellRecordType, shellId;

    /** {@code declaration}: the JSON text {@code DeclaredRows.text()} writes. */
    @SuppressWarnings("unchecked")
    public DeclaredJson(String declaration) throws java.io.IOException {
        Map<String, Object> d;
        try (JsonParser p = FACTORY.createParser(declaration)) {
            d = (Map<String, Object>) read(p, p.nextToken());
        }
        List<Object> op = (List<Object>) d.get("op");
        opPath = ((String) op.get(0)).split("\\.");
        ((Map<String, Object>) op.get(1)).forEach((k, v) -> {
            ops.put(k, (String) v);
            opValues.putIfAbsent((String) v, k);
        });
        ((Map<String, Object>) d.get("reads")).forEach((role, at) -> {
            List<Object> pathKind = (List<Object>) at;
            String[] alternatives = ((String) pathKind.get(0)).split("\\|");
            String[][] paths = new String[alternatives.length][];
            for (int i = 0; i < paths.length; i++) paths[i] = alternatives[i].split("\\.");
            reads.put(role, paths);
            kinds.put(role, (String) pathKind.get(1));
        });
        for (Object image : (List<Object>) d.get("images")) {
            imageRoles.add((String) ((List<Object>) image).get(0));
            imagePaths.add(((String) ((List<Object>) image).get(1)).split("\\."));
            imageRoleAt.put((String) ((List<Object>) image).get(1), (String) ((List<Object>) image).get(0));
        }
        for (Map.Entry<String, Object> e : ((Map<String, Object>) d.get("writes")).entrySet()) {
            String rendering = (String) e.getValue();
            writes.put(e.getKey(), rendering);
            if (rendering.startsWith("=")) constants.put(rendering, parse(rendering.substring(1)));
        }
        for (Map.Entry<String, Object> e : ((Map<String, Object>) d.get("requires")).entrySet()) {
            List<Object> values = new ArrayList<>();
            for (Object text : (List<Object>) e.getValue()) values.add(parse((String) text));
            requires.put(e.getKey().split("\\."), values);
        }
        for (Map.Entry<String, Object> e : ((Map<String, Object>) d.get("needs")).entrySet()) {
            List<Object[]> kind = new ArrayList<>();
            for (Object n : (List<Object>) e.getValue()) {
                List<Object> need = (List<Object>) n;
                kind.add(new Object[] {((String) need.get(0)).split("\\."),
                        new HashSet<Object>((List<Object>) need.get(1)), need.get(2) == Boolean.TRUE});
            }
            needs.put(e.getKey(), kind);
        }
        sequenceNone = d.get("sequence_none") instanceof String ? (String) d.get("sequence_none") : null;
        leafPaths = d.get("leaf_paths") == Boolean.TRUE;
        namesStripped = d.get("names_stripped") == Boolean.TRUE;
        fixKeys = d.get("fix_keys") == Boolean.TRUE;
        typesComplete = d.get("types_complete") == Boolean.TRUE;
        deleteHidesOther = d.get("delete_hides_other") == Boolean.TRUE;
        for (Object f : (List<Object>) d.get("decline_families")) declineFamilies.add((String) f);
        ((Map<String, Object>) d.get("value_conversions")).forEach((f, how) -> conversions.put(f, (String) how));
        deleteMain = "rows".equals(d.get("delete_main")) ? "rows" : "row_befores";
        columnsExact = d.get("columns_exact") == Boolean.TRUE;
        for (Map.Entry<String, String> e : writes.entrySet()) {  // "key.sub" paths: by key (nested objects)
            String[] parts = e.getKey().split("\\.");
            if (parts.length == 2) {
                writesUnder.computeIfAbsent(parts[0], k -> new LinkedHashMap<>()).put(parts[1], e.getValue());
            }
        }
        for (String path : writes.keySet()) {
            String prefix = "";
            for (String key : path.split("\\.")) {
                children.computeIfAbsent(prefix, k -> new LinkedHashSet<>()).add(key);
                prefix = prefix.isEmpty() ? key : prefix + "." + key;
            }
        }
        for (String[] path : imagePaths) {
            imageParents.add(String.join(".", path.length > 1 ? java.util.Arrays.copyOf(path, path.length - 1) : path));
        }
        rowsKey = pathOf("rows");
        rowBeforesKey = pathOf("row_befores");
        rowChangesKey = pathOf("row_changes");
        conversionsWhen = d.get("conversions_when") instanceof String ? (String) d.get("conversions_when") : null;
        familyByNameThenCode = d.get("family_by_name_then_code") == Boolean.TRUE;
        opInVendor = d.get("op_in_vendor") instanceof String ? (String) d.get("op_in_vendor") : null;
        keyDeclared = d.get("key_declared") == Boolean.TRUE;
        convertNumbers = d.get("convert_numbers") == Boolean.TRUE;
        schemaLevel = d.get("schema_level") == Boolean.TRUE;
        ((Map<String, Object>) d.get("jdbc_by_name")).forEach((b, c) -> jdbcByName.put(b, code(c)));
        ((Map<String, Object>) d.get("codes_by_name")).forEach((b, c) -> codesByName.put(b, code(c)));
        for (Object rule : (List<Object>) d.get("jdbc_name_rules")) {
            List<Object> r = (List<Object>) rule;
            jdbcNameRules.add(new Object[] {r.get(0), r.get(1), code(r.get(2))});
        }
        deleteInVendor = d.get("delete_in_vendor") instanceof String ? (String) d.get("delete_in_vendor") : null;
        for (Object k : (List<Object>) d.get("nested")) nested.add((String) k);
        for (Object k : (List<Object>) d.get("declines")) declined.add((String) k);
        for (Object k : (List<Object>) d.get("tenant_types")) tenantTypes.add((String) k);
        Object sep = d.get("key_separator");
        keySeparator = sep instanceof String ? (String) sep : null;
        nullCellsDeclare = d.get("null_cells_declare") == Boolean.TRUE;
        sequenceFromSeconds = d.get("sequence_from_seconds") == Boolean.TRUE;
        databaseRequired = d.get("database_required") == Boolean.TRUE;
        qualifiedTable = d.get("qualified_table") instanceof String ? (String) d.get("qualified_table") : null;
        unwrittenImages = d.get("compare_unwritten_images") == Boolean.TRUE;
        Map<String, Object> typed = d.get("image_types") instanceof Map ? (Map<String, Object>) d.get("image_types")
                : Map.of();
        typesKey = (String) typed.get("key");
        typeMember = (String) typed.get("member");
        typesVendor = (String) typed.get("vendor");
        if (typesKey != null) for (Object k : (List<Object>) typed.get("order")) typesOrder.add((String) k);
        Map<String, Object> envelope = d.get("envelope") instanceof Map ? (Map<String, Object>) d.get("envelope")
                : Map.of();
        envelopeKey = (String) envelope.get("key");
        envelopeSchema = (String) envelope.get("schema");
        envelopeVendor = (String) envelope.get("vendor");
        schemaOpening = envelopeKey == null ? null
                : ("{\"" + envelopeSchema + "\":").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        payloadOpening = envelopeKey == null ? null
                : (",\"" + envelopeKey + "\":").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (envelopeKey != null) for (Object k : (List<Object>) envelope.get("bare_keys")) bareKeys.add((String) k);
        connect = d.get("connect_schema") instanceof Map
                ? new ConnectSchema.Rules((Map<String, Object>) d.get("connect_schema")) : null;
        Map<String, Object> positions = d.get("positions") instanceof Map ? (Map<String, Object>) d.get("positions")
                : Map.of();
        positionsAt = split(positions.get("at"));
        connectorKey = (String) positions.get("connector");
        thenKey = (String) positions.get("then");
        if (positionsAt != null) {
            for (Object r : (List<Object>) positions.get("rules")) {
                Map<String, Object> rule = (Map<String, Object>) r;
                List<Set<String>> nameless = new ArrayList<>();
                for (Object keys : (List<Object>) rule.get("nameless")) {
                    nameless.add(new HashSet<>((List<String>) keys));
                }
                positionRules.add(new Object[] {rule.get("how"), new HashSet<>((List<String>) rule.get("connectors")),
                        nameless, ((List<String>) rule.get("keys")).toArray(new String[0])});
            }
        }
        recordKeyNames = d.get("record_key_names") == Boolean.TRUE;
        Map<String, Object> docs = d.get("documents") instanceof Map ? (Map<String, Object>) d.get("documents")
                : Map.of();
        docVendor = (String) docs.get("vendor");
        docChanges = (String) docs.get("changes");
        docUpdated = (String) docs.get("updated");
        docRemoved = (String) docs.get("removed");
        docTruncated = (String) docs.get("truncated");
        docId = (String) docs.get("id_field");
        keyMember = (String) docs.get("key_member");
        Map<String, Object> shell = d.get("shell_documents") instanceof Map
                ? (Map<String, Object>) d.get("shell_documents") : Map.of();
        shellValue = (String) shell.get("value");
        shellWhere = (String) shell.get("where");
        shellRecordType = (String) shell.get("record_type");
        shellId = (String) shell.get("id_field");
    }

    private static String[] split(Object path) {
        return path instanceof String ? ((String) path).split("\\.") : null;
    }

    private static int code(Object number) {
        return Integer.parseInt(((Num) number).text);
    }

    private static Object parse(String json) throws java.io.IOException {
        try (JsonParser p = FACTORY.createParser(json)) {
            return read(p, p.nextToken());
        }
    }

    /** The key path of the image of a role, or null. */
    private String pathOf(String role) {
        for (int i = 0; i < imageRoles.size(); i++) {
            if (imageRoles.get(i).equals(role)) return String.join(".", imagePaths.get(i));
        }
        return null;
    }

    @Override
    public List<Object[]> rows(byte[] buf, int off, int len) {
        return rows(buf, off, len, null);
    }

    // The timestamp of the Kafka record being decoded (null: none, or a line of a file), for "record_millis".
    private Long recordMillis;

    // The key of the Kafka record being decoded (null: none, or a line of a file), for record_key_names.
    private byte[] recordKey;

    @Override
    public List<Object[]> rows(byte[] buf, int off, int len, Long recordMillis, byte[] key) {
        recordKey = key;
        try {
            return rows(buf, off, len, recordMillis);
        } finally {
            recordKey = null;
        }
    }

    @Override
    public List<Object[]> rows(byte[] buf, int off, int len, Long recordMillis) {
        this.recordMillis = recordMillis;
        try {
            return decode(buf, off, len);
        } catch (JsonChecks.Decline | java.io.IOException | ArithmeticException e) {
            return null;  // not a message this decode is sure of: the Python codec decides
        }
    }

    private static Object read(JsonParser p, JsonToken t) throws java.io.IOException {
        return JsonChecks.tree(p, t, NULL, NUMBERS);
    }

    /** A number as its literal, as written. */
    private static final JsonChecks.Numbers NUMBERS = (q, token) -> new Num(JsonChecks.number(q));

    /** The one JSON value of a text (its numbers as written); declines anything else. */
    static Object whole(String text) throws java.io.IOException {
        return JsonChecks.whole(FACTORY.createParser(text), NULL, NUMBERS);
    }

    /** The value at a key path, MISSING where a key is absent; NULL for a JSON null on the way (read as absent
     *  by the codecs); declines where the path crosses a value that is not an object. */
    @SuppressWarnings("unchecked")
    private static Object at(Map<String, Object> msg, String[] path) {
        Object v = msg;
        for (String key : path) {
            if (v == NULL || v == MISSING) return MISSING;
            if (!(v instanceof Map)) throw JsonChecks.DECLINE;
            v = ((Map<String, Object>) v).getOrDefault(key, MISSING);
        }
        return v;
    }

    /** A role's value as text, or null (absent or JSON null); declines a value of another kind than declared. */
    private String role(Map<String, Object> msg, String role) {
        return role(msg, role, null);
    }

    /** The same, null also where the value is the text {@code none}. */
    private String role(Map<String, Object> msg, String role, String none) {
        String[][] paths = reads.get(role);
        if (paths == null) return null;
        Object v = MISSING;
        for (int i = 0; i < paths.length && (v == MISSING || v == NULL); i++) v = at(msg, paths[i]);
        if (v == MISSING || v == NULL || none != null && none.equals(v)) return null;
        // text, digits (text of ASCII digits), scalar (text or a number), number, integer (a number of digits)
        String kind = kinds.get(role);
        if (v instanceof String && (kind.equals("text") || kind.equals("scalar"))) return (String) v;
        if (v instanceof String && kind.equals("digits") && JsonChecks.digits((String) v)) return (String) v;
        if (v instanceof Num && !kind.equals("text") && !kind.equals("digits")
                && (!kind.equals("integer") || JsonChecks.integerText(((Num) v).text, Integer.MAX_VALUE))) {
            return ((Num) v).text;
        }
        throw JsonChecks.DECLINE;
    }

    private static long integer(String text) {
        if (!JsonChecks.integerText(text, 19)) throw JsonChecks.DECLINE;
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw JsonChecks.DECLINE;
        }
    }

    @SuppressWarnings("unchecked")
    private List<Object[]> decode(byte[] raw, int off, int len) throws java.io.IOException {
        JsonChecks.checkRaw(raw, off, len);
        Map<String, Object> msg = connect == null ? null : knownSchema(raw, off, len);
        if (msg == null) {
            try (JsonParser p = FACTORY.createParser(raw, off, len)) {
                JsonToken t = p.nextToken();
                if (t != JsonToken.START_OBJECT) throw JsonChecks.DECLINE;
                msg = connect == null ? (Map<String, Object>) read(p, t) : withSchema(p, raw, off);
                if (p.nextToken() != null) throw JsonChecks.DECLINE;
            }
        }
        String envelope = null;
        ConnectSchema schemaOf = null;
        if (envelopeKey != null) {  // the row message: inside the envelope, or the message itself
            boolean wrapped = msg.containsKey(envelopeKey);
            for (String k : msg.keySet()) wrapped &= !bareKeys.contains(k);
            Object schemaAt = msg.get(envelopeSchema);
            if (wrapped) {
                for (String k : msg.keySet()) {  // keys a newer converter adds beside the two: the codec keeps them
                    if (!k.equals(envelopeKey) && !k.equals(envelopeSchema)) throw JsonChecks.DECLINE;
                }
                if (!(msg.get(envelopeKey) instanceof Map)) throw JsonChecks.DECLINE;  // a tombstone, or not a payload
                envelope = schemaAt == null ? "payload" : "schema";
                if (schemaAt != null && !(schemaAt instanceof ConnectSchema)) throw JsonChecks.DECLINE;  // null too
                schemaOf = (ConnectSchema) schemaAt;
                msg = (Map<String, Object>) msg.get(envelopeKey);
            } else {
                envelope = "bare";
                if (schemaAt instanceof ConnectSchema) msg.put(envelopeSchema, ((ConnectSchema) schemaAt).tree);
            }
        }
        for (String k : msg.keySet()) if (declined.contains(k)) throw JsonChecks.DECLINE;
        for (Map.Entry<String[], List<Object>> e : requires.entrySet()) {
            Object v = at(msg, e.getKey());
            boolean allowed = v == MISSING || v == NULL;
            for (Object value : e.getValue()) allowed |= same(v, value);
            if (!allowed) throw JsonChecks.DECLINE;  // another kind of message (DDL, control): the codec's
        }
        Row row = new Row();
        Object kind = at(msg, opPath);
        row.op = kind instanceof String ? ops.get(kind) : null;
        if (row.op == null) throw JsonChecks.DECLINE;
        row.vendorOp = (String) kind;
        for (Object[] need : needs.getOrDefault((String) kind, List.of())) {
            if (!satisfies(at(msg, (String[]) need[0]), (Set<Object>) need[1], (Boolean) need[2])) {
                throw JsonChecks.DECLINE;  // required.py: the codec names the field
            }
        }
        row.database = role(msg, "database");
        row.table = role(msg, "table");
        if ("one_dot".equals(qualifiedTable) && row.table != null) {  // SCHEMA.TABLE; a third level declines
            String[] parts = row.table.split("\\.", -1);
            if (parts.length > 2) throw JsonChecks.DECLINE;
            row.database = parts.length == 2 && !parts[0].isEmpty() ? parts[0] : null;
            row.table = parts[parts.length - 1];
        } else if ("first_dot".equals(qualifiedTable) && row.table != null && row.table.indexOf('.') >= 0) {
            int dot = row.table.indexOf('.');  // database.table, split at the first dot
            row.database = row.table.substring(0, dot);
            row.table = row.table.substring(dot + 1);
        }
        if (namesStripped) {  // read stripped of blanks (DRS writes "test " for test): such a name is the codec's
            if (blankEnds(row.database) || blankEnds(row.table)) throw JsonChecks.DECLINE;
            if (row.database != null && row.database.isEmpty()) row.database = null;
        }
        if (row.table == null || row.table.isEmpty() || databaseRequired && (row.database == null
                || row.database.isEmpty())) {
            throw JsonChecks.DECLINE;  // required (shared/required.py): decode names it
        }
        String tenantType = role(msg, "tenant");
        if (tenantType != null && tenantTypes.contains(tenantType) && row.database != null) {
            int dot = row.database.indexOf('.');
            if (dot >= 0) {
                row.tenant = row.database.substring(0, dot);
                row.database = row.database.substring(dot + 1);
            }
        }
        if (!(JsonChecks.nameFits(row.database) && JsonChecks.nameFits(row.table))) throw JsonChecks.DECLINE;
        String schema = role(msg, "schema");  // a level between database and table: the record's schema field
        if (schemaLevel) {  // the event's schema, read as the names are
            if (namesStripped && blankEnds(schema)) throw JsonChecks.DECLINE;
            row.schema = schema == null || schema.isEmpty() ? null : schema;
            if (!JsonChecks.nameFits(row.schema)) throw JsonChecks.DECLINE;
        } else if (schema != null && !schema.isEmpty() && !schema.equals(row.database)) {
            throw JsonChecks.DECLINE;
        }
        String seconds = role(msg, "seconds");
        if (seconds != null) row.ms = Math.multiplyExact(integer(seconds), 1000L);  // the record's int64
        String millis = role(msg, "millis");
        if (millis != null) row.ms = integer(millis);
        String stamp = role(msg, "stamp");
        if (stamp != null) row.ms = stampMillis(stamp, STAMP);
        String stampSeconds = role(msg, "stamp_seconds");
        if (stampSeconds != null) row.ms = stampMillis(stampSeconds, STAMP_SECONDS);
        String sequence = role(msg, "sequence", sequenceNone), next = role(msg, "sequence_next");
        if (sequence != null || next != null) {
            row.sequence = sequence != null && next != null ? new BigDecimal[] {component(sequence), component(next)}
                    : new BigDecimal[] {component(sequence == null ? next : sequence)};
        } else if (sequenceFromSeconds && seconds != null && !"SNAPSHOT".equals(row.op)) {
            row.sequence = new BigDecimal[] {BigDecimal.valueOf(integer(seconds))};
        }
        if (positionsAt != null) row.sequence = position(msg);
        row.txn = role(msg, "transaction_id");
        readKey(msg, row);
        if (rowsKey != null) return listRows(msg, row);

        // images, and the columns they declare in the declared order: a number column when its cells are bare
        // numbers; a column written both ways would need the per-cell rendering the Python codec keeps
        LinkedHashMap<String, Boolean> numbers = new LinkedHashMap<>();
        Map<String, LinkedHashMap<String, String>> images = new HashMap<>();
        Map<String, String> types = new HashMap<>();  // a column's type: the first image that types it says
        Map<String, Object> typeObjects = new HashMap<>();  // an image's key -> its types object (MISSING: none)
        if (connect != null && docVendor == null) row.columns = connectImages(msg, schemaOf, images, row.op);
        for (int i = 0; i < imageRoles.size() && connect == null && docVendor == null; i++) {
            if (imageRoles.get(i).equals("update_before") && !"UPDATE".equals(row.op)) continue;  // not read
            Object image = at(msg, imagePaths.get(i));
            if (image == MISSING && imagePaths.get(i).length > 1) {  // {"data": ...} without its data: the codec's
                String[] path = imagePaths.get(i);
                Object parent = at(msg, java.util.Arrays.copyOf(path, path.length - 1));
                if (parent != MISSING && parent != NULL) throw JsonChecks.DECLINE;
            }
            if (image == MISSING || image == NULL) continue;
            if (!(image instanceof Map)) throw JsonChecks.DECLINE;
            images.put(imageRoles.get(i), cells((Map<String, Object>) image, numbers, types));
            if (typesKey != null) {
                typeObjects.put(String.join(".", imagePaths.get(i)),
                        ((Map<String, Object>) image).getOrDefault(typesKey, MISSING));
            }
        }
        for (String name : types.keySet()) {  // types of columns no image has: the codec writes a warning
            boolean named = false;
            for (Map<String, String> cells : images.values()) named |= cells.containsKey(name);
            if (!named) throw JsonChecks.DECLINE;
        }
        if (reads.containsKey("column_specs")) {
            row.columns = specColumns(msg, row, numbers, images);
        }
        StringBuilder vendor = new StringBuilder(64).append('{');
        if (row.tenant != null) {
            vendor.append("\"tenant\":");
            OrjsonText.quote(vendor, row.tenant);
        }
        if (docVendor != null) {
            documentRow(msg, row, vendor);
        } else if (shellValue != null) {
            shellRow(msg, row, vendor);
        } else if (connect != null) {
            connectRow(row, images);
        } else {
            placeImages(row, images, vendor);
        }
        if (typesKey != null) imageTypes(numbers, types, typeObjects, vendor);
        if (envelope != null) {
            if (vendor.length() > 1) vendor.append(',');
            OrjsonText.quote(vendor, envelopeVendor);
            vendor.append(':');
            OrjsonText.quote(vendor, envelope);
            if (schemaOf != null) {
                if (schemaOf.vendorText == null) {  // the same for every message of the schema
                    StringBuilder b = new StringBuilder(schemaOf.text.length() * 5 / 4).append(',');
                    OrjsonText.quote(b, envelopeSchema);
                    b.append(':');
                    OrjsonText.quote(b, schemaOf.text);
                    schemaOf.vendorText = b.toString();
                }
                vendor.append(schemaOf.vendorText);
            }
        }
        fixes(msg, row, vendor);
        String tableName = qualified(row);
        List<Object[]> declared = reads.containsKey("column_specs") || connect != null || docVendor != null
                || shellValue != null ? row.columns
                : columns(numbers, types, Map.of());
        Object[] r = {row.op, row.database, row.table, tableName, row.before, row.after, declared, row.key, row.ms,
                row.sequence, 0, vendor.length() == 1 ? null : vendor.append('}').toString(), true, row.txn,
                row.schema, row.replaces, row.removed};
        List<Object[]> rows = new ArrayList<>(1);
        rows.add(r);
        return rows;
    }

    // ------------------------------------------------------------------------ Kafka Connect envelopes (connect_schema)

    /** The message's object after its opening brace, its schema (at envelopeSchema, an object) as a ConnectSchema:
     *  the recent schemas' bytes are compared with it before it is read. */
    private Map<String, Object> withSchema(JsonParser p, byte[] raw, int off) throws java.io.IOException {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        for (JsonToken k = p.nextToken(); k != JsonToken.END_OBJECT; k = p.nextToken()) {
            String name = JsonChecks.text(p.currentName());
            JsonToken t = p.nextToken();
            Object v;
            if (t == JsonToken.START_OBJECT && name.equals(envelopeSchema)) {
                int from = off + (int) p.currentTokenLocation().getByteOffset();  // offsets from the parser's start
                p.skipChildren();  // nesting and bytes checked as Jackson reads them
                v = schemaAt(raw, from, off + (int) p.currentLocation().getByteOffset());
            } else {
                v = read(p, t);
            }
            if (m.put(name, v) != null) throw JsonChecks.DECLINE;  // a duplicate key: the Python readers keep the last
        }
        return m;
    }

    /** A message as a converter writes it, {"schema":<a recent schema's bytes>,"payload":{...}}, read without
     *  reading its schema: what reading it whole gives. Null for any other: it is read whole. */
    private Map<String, Object> knownSchema(byte[] raw, int off, int len) throws java.io.IOException {
        int end = off + len, at = off + schemaOpening.length;
        if (!java.util.Arrays.equals(raw, off, Math.min(at, end), schemaOpening, 0, schemaOpening.length)) return null;
        for (int i = 0; i < recentSchemas.size(); i++) {
            ConnectSchema known = recentSchemas.get(i);
            int from = at + known.bytes.length, payload = from + payloadOpening.length;
            if (payload >= end || !known.is(raw, at, from)
                    || !java.util.Arrays.equals(raw, from, payload, payloadOpening, 0, payloadOpening.length)) {
                continue;
            }
            if (i > 0) recentSchemas.add(0, recentSchemas.remove(i));
            LinkedHashMap<String, Object> msg = new LinkedHashMap<>();
            msg.put(envelopeSchema, known);
            try (JsonParser p = INSIDE.createParser(raw, payload, end - payload)) {
                JsonToken t = p.nextToken();
                if (t != JsonToken.START_OBJECT) return null;
                msg.put(envelopeKey, read(p, t));
                int rest = payload + (int) p.currentLocation().getByteOffset();
                while (rest < end && blank(raw[rest])) rest++;
                if (rest >= end || raw[rest] != '}') return null;  // keys after the payload: read whole
                for (rest++; rest < end; rest++) if (!blank(raw[rest])) return null;
            }
            return msg;
        }
        return null;
    }

    private static boolean blank(byte b) {
        return b == ' ' || b == '\t' || b == '\n' || b == '\r';
    }

    private ConnectSchema schemaAt(byte[] raw, int from, int to) throws java.io.IOException {
        for (int i = 0; i < recentSchemas.size(); i++) {
            ConnectSchema known = recentSchemas.get(i);
            if (known.is(raw, from, to)) {
                if (i > 0) recentSchemas.add(0, recentSchemas.remove(i));  // a topic's tables take turns
                return known;
            }
        }
        Object tree = JsonChecks.whole(FACTORY.createParser(raw, from, to - from), NULL, NUMBERS);
        ConnectSchema schema = new ConnectSchema(java.util.Arrays.copyOfRange(raw, from, to), tree, NULL, connect);
        recentSchemas.add(0, schema);
        if (recentSchemas.size() > 32) recentSchemas.remove(32);
        return schema;
    }

    /** The images (imageRoles' paths) read by the schema's fields (none without a schema) into {@code images}, and
     *  the columns they declare: the schema's in its order, then those only the images name (after's first). A cell
     *  is taken where it is written as its field's kind says and that kind's conversion is taken
     *  (ConnectSchema); a column without a field, written as bare numbers or as strings. */
    @SuppressWarnings("unchecked")
    private List<Object[]> connectImages(Map<String, Object> msg, ConnectSchema schema,
                                         Map<String, LinkedHashMap<String, String>> images, String op) {
        Map<String, ConnectSchema.Field> fields = schema == null ? Map.of() : schema.fields;
        Map<String, Boolean> numbers = new HashMap<>();  // a column with a cell written as a bare number
        boolean unfielded = false;
        for (int i = 0; i < imageRoles.size(); i++) {
            Object image = at(msg, imagePaths.get(i));
            if (image == MISSING || image == NULL) continue;
            if (!(image instanceof Map)) throw JsonChecks.DECLINE;  // a document as text (MongoDB): the codec's
            if (((Map<String, Object>) image).isEmpty()) {  // CloudCanal's {} for the image an op does not have
                boolean none = imageRoles.get(i).equals("before") ? "SNAPSHOT".equals(op) || "INSERT".equals(op)
                        : "DELETE".equals(op);
                if (none) continue;
                throw JsonChecks.DECLINE;
            }
            LinkedHashMap<String, String> cells = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : ((Map<String, Object>) image).entrySet()) {
                Object v = e.getValue();
                ConnectSchema.Field field = fields.get(e.getKey());
                unfielded |= field == null;
                if (v == NULL) {
                    cells.put(e.getKey(), null);
                    continue;
                }
                String kind = field == null ? (v instanceof Num ? "num" : "str") : field.kind;
                String text;
                switch (kind) {
                    case "num": text = v instanceof Num ? ((Num) v).text : null; break;
                    case "str": text = v instanceof String ? (String) v : null; break;
                    case "bool": text = v instanceof Boolean ? v.toString() : null; break;
                    case "json": {
                        if (!(v instanceof Map || v instanceof List)) throw JsonChecks.DECLINE;
                        StringBuilder b = new StringBuilder();
                        OrjsonText.json(b, v, NULL);
                        text = b.toString();
                        break;
                    }
                    case "decimal": text = ConnectSchema.decimal(v, field.scale); break;
                    case "date": case "time3": case "time6": case "time9": case "ts3": case "ts6": case "ts9":
                        text = ConnectSchema.units(v, kind);
                        break;
                    case "vsdecimal": text = ConnectSchema.variableDecimal(v); break;
                    case "zts": text = ConnectSchema.zoned(v, false); break;
                    case "ztime": text = ConnectSchema.zoned(v, true); break;
                    case "epoch_zts": text = ConnectSchema.instant(v); break;
                    case "bits": text = ConnectSchema.bits(v, field.length); break;
                    default: text = null;  // conversions not taken here
                }
                if (text == null) throw JsonChecks.DECLINE;  // written otherwise than its field says: kept per cell
                boolean number = kind.equals("num");
                if (field == null && numbers.getOrDefault(e.getKey(), number) != number) {
                    throw JsonChecks.DECLINE;  // a column without a field written both ways
                }
                if (number || field == null) numbers.merge(e.getKey(), number, Boolean::logicalOr);
                cells.put(e.getKey(), text);
            }
            images.put(imageRoles.get(i), cells);
        }
        LinkedHashMap<String, Boolean> declared = new LinkedHashMap<>();
        Map<String, String> types = new HashMap<>();
        Map<String, Integer> jdbc = new HashMap<>();
        for (Map.Entry<String, ConnectSchema.Field> e : fields.entrySet()) {
            declared.put(e.getKey(), numbers.getOrDefault(e.getKey(), false));
            types.put(e.getKey(), e.getValue().typeName);
            jdbc.put(e.getKey(), e.getValue().jdbc);
        }
        if (unfielded) {
            for (String role : new String[] {"after", "before"}) {
                Map<String, String> cells = images.get(role);
                if (cells == null) continue;
                for (String name : cells.keySet()) declared.putIfAbsent(name, numbers.getOrDefault(name, false));
            }
        }
        return columns(declared, types, jdbc);
    }

    /** The images of an own-envelope row: a DELETE's before (naming a row), an UPDATE's after (its before may be
     *  missing: PostgreSQL's default replica identity), an insert's after; the key's names from the record key. */
    private void connectRow(Row row, Map<String, LinkedHashMap<String, String>> images) throws java.io.IOException {
        row.before = images.get("before");
        row.after = images.get("after");
        boolean delete = "DELETE".equals(row.op), update = "UPDATE".equals(row.op);
        if (delete ? row.before == null || row.after != null : row.after == null || !update && row.before != null) {
            throw JsonChecks.DECLINE;
        }
        if (delete && !row.before.values().stream().anyMatch(v -> v != null)) {
            throw JsonChecks.DECLINE;  // a DELETE that names no row: the codec's error
        }
        if (!recordKeyNames || recordKey == null || recordKey.length == 0) return;
        Object key = recordKeyValue();
        if (!(key instanceof Map)) throw JsonChecks.DECLINE;  // a key of another kind names no columns
        for (Object name : ((Map<?, ?>) key).keySet()) row.key.add((String) name);
        // the key's columns must be in the image the change is keyed by (else the codec names the problem, or
        // reads them from the record key)
        Map<String, String> keyed = delete || row.before != null ? row.before : row.after;
        for (String name : row.key) if (keyed.get(name) == null) throw JsonChecks.DECLINE;
    }

    // ------------------------------------------------------------------------------ MongoDB documents (documents)

    /** A MongoDB change whose images are Extended JSON document strings (debezium_bson's _event): an insert's after,
     *  a delete's before (else its record key's), an update's before (else the key) and its after: the whole
     *  document, which replaces the row, or the key and the updated fields. The columns are the fields' BSON types
     *  (a later document's over an earlier one's, the record key's where no document types a field). Declines what
     *  the codec keeps as a fix of a document or as removed columns, and what it names as an error. */
    @SuppressWarnings("unchecked")
    private void documentRow(Map<String, Object> msg, Row row, StringBuilder vendor) throws java.io.IOException {
        boolean inserted = "INSERT".equals(row.op) || "SNAPSHOT".equals(row.op), delete = "DELETE".equals(row.op);
        Object before = at(msg, imagePaths.get(imageRoles.indexOf("before")));
        Object after = at(msg, imagePaths.get(imageRoles.indexOf("after")));
        boolean hasBefore = before != MISSING && before != NULL, hasAfter = after != MISSING && after != NULL;
        if (inserted ? hasBefore || !hasAfter : delete && hasAfter) throw JsonChecks.DECLINE;
        row.replaces = "UPDATE".equals(row.op) && hasAfter;
        LinkedHashMap<String, Object[]> columns = new LinkedHashMap<>();
        LinkedHashMap<String, ExtendedJson.Typed> beforeFields = hasBefore ? fieldsOf(before) : null;
        LinkedHashMap<String, String> beforeImage = hasBefore ? image(beforeFields, columns) : null;
        LinkedHashMap<String, String> afterImage = hasAfter ? image(fieldsOf(after), columns) : null;
        row.beforeDocument = hasBefore ? (String) before : null;
        row.afterDocument = hasAfter ? (String) after : null;
        LinkedHashMap<String, String> keyImage = new LinkedHashMap<>();
        documentKey(keyImage, columns, row.key);
        Map<String, String> keyed = afterImage != null && !afterImage.isEmpty() ? afterImage
                : beforeImage != null && !beforeImage.isEmpty() ? beforeImage : Map.of();
        if (keyed.containsKey(docId)) {
            row.key.clear();
            row.key.add(docId);
        }
        String updated = null;
        if (delete && beforeImage == null) {
            if (keyImage.isEmpty()) throw JsonChecks.DECLINE;  // the deleted document is unknown: the codec's error
            beforeImage = new LinkedHashMap<>(keyImage);
            row.beforeFromKey = true;
        } else if ("UPDATE".equals(row.op)) {
            LinkedHashMap<String, String> key = new LinkedHashMap<>();
            for (Map.Entry<String, String> e : (beforeImage != null && !beforeImage.isEmpty() ? beforeImage
                    : keyImage).entrySet()) {
                if (row.key.contains(e.getKey())) key.put(e.getKey(), e.getValue());
            }
            if (key.isEmpty()) key = keyImage;
            if (beforeImage == null) {
                if (key.isEmpty()) throw JsonChecks.DECLINE;  // the updated document is unknown: the codec's error
                beforeImage = new LinkedHashMap<>(key);
                row.beforeFromKey = true;
            }
            if (!row.replaces) updated = describedAfter(msg, row, key, beforeImage, columns);
            if (hasBefore && !beforeKeepsTypes(beforeFields, columns, row.beforeDocument)) throw JsonChecks.DECLINE;
        }
        row.before = inserted ? null : beforeImage;
        row.after = delete ? null : row.after != null ? row.after : afterImage;
        row.columns = documentColumns(columns, row.before, row.after, true);
        if (vendor.length() > 1) vendor.append(',');
        if (row.beforeFromKey) vendor.append("\"before_from_key\":true,");
        OrjsonText.quote(vendor, docVendor);
        vendor.append(":{");
        String[][] parts = {{"before", row.beforeDocument}, {"after", row.afterDocument}, {docUpdated, updated}};
        boolean first = true;
        for (String[] part : parts) {
            if (part[1] == null) continue;
            if (!first) vendor.append(',');
            OrjsonText.quote(vendor, part[0]);
            vendor.append(':');
            OrjsonText.quote(vendor, part[1]);
            first = false;
        }
        vendor.append('}');
    }

    /** An UPDATE's after from the description of its changes (docChanges): the key, then the updated fields; its
     *  updated fields document, which the encoder writes back as it is (else the codec's). */
    @SuppressWarnings("unchecked")
    private String describedAfter(Map<String, Object> msg, Row row, Map<String, String> key,
                                  Map<String, String> beforeImage, Map<String, Object[]> columns)
            throws java.io.IOException {
        Object changes = msg.get(docChanges);
        if (!(changes instanceof Map)) throw JsonChecks.DECLINE;
        Map<String, Object> description = (Map<String, Object>) changes;
        Object fields = description.getOrDefault(docUpdated, NULL);
        Object removed = description.getOrDefault(docRemoved, NULL);
        Object truncated = description.getOrDefault(docTruncated, NULL);
        // removed fields (removed_columns) and truncated arrays (vendor data) are the codec's; no updated
        // fields would be written back as "{}"
        if (fields == NULL || truncated != NULL || removed != NULL && !(removed instanceof List
                && ((List<Object>) removed).isEmpty())) {
            throw JsonChecks.DECLINE;
        }
        LinkedHashMap<String, ExtendedJson.Typed> updatedFields = fieldsOf(fields);
        LinkedHashMap<String, String> afterImage = new LinkedHashMap<>(key);
        afterImage.putAll(image(updatedFields, columns));
        String updated = (String) fields;
        // what the encoder writes as the updated fields (the after's, but key fields the before has unchanged)
        // must be the document's fields in its order, for the document to be written back as it is
        List<String> written = new ArrayList<>(afterImage.size());
        for (Map.Entry<String, String> e : afterImage.entrySet()) {
            String name = e.getKey();
            if (!(row.key.contains(name) && beforeImage.containsKey(name)
                    && java.util.Objects.equals(beforeImage.get(name), e.getValue()))) {
                written.add(name);
            }
        }
        if (!written.equals(new ArrayList<>(updatedFields.keySet()))) {
            throw JsonChecks.DECLINE;
        }
        LinkedHashMap<String, Object> d = new LinkedHashMap<>();
        d.put(docRemoved, NULL);
        d.put(docUpdated, updated);
        d.put(docTruncated, NULL);
        row.description = d;
        row.after = afterImage;
        return updated;
    }

    // The BSON types the encoder writes as bare numbers (a number of another of them keeps its literal)
    private static final Set<String> NUMBER_TYPES = Set.of("int32", "int64", "double");
    // The types whose canonical text the encoder writes back in the spelling read (render_typed)
    private static final Set<String> SAME_SPELLING = Set.of("null", "string", "bool", "int32", "int64", "double",
            "decimal128", "objectId", "object", "array");

    /** Whether an update's before document is written back as it is (debezium_bson._reads_as): each field keeps
     *  the type its column ends with; or a bare number whose column is now another number type (which the encoder
     *  writes as the same literal) in a document that the encoder's writing reproduces: compact, and each field in
     *  the spelling its type writes. */
    private static boolean beforeKeepsTypes(Map<String, ExtendedJson.Typed> fields, Map<String, Object[]> columns,
                                            String document) throws java.io.IOException {
        boolean retyped = false;  // a number column of another type: the encoder writes the document anew
        for (Map.Entry<String, ExtendedJson.Typed> e : fields.entrySet()) {
            ExtendedJson.Typed t = e.getValue();
            Object[] c = columns.get(e.getKey());
            if (t.text == null || c[1].equals(t.type) && c[3].equals(t.number)) continue;
            if (!(t.number && c[3] == Boolean.TRUE && NUMBER_TYPES.contains(c[1]))) return false;
            retyped = true;
        }
        if (!retyped) return true;
        for (ExtendedJson.Typed t : fields.values()) if (!SAME_SPELLING.contains(t.type)) return false;
        StringBuilder compact = new StringBuilder(document.length());
        OrjsonText.json(compact, whole(document), NULL);
        return compact.toString().equals(document);
    }

    /** A document string's fields; declines another value (the codec's error). */
    private static LinkedHashMap<String, ExtendedJson.Typed> fieldsOf(Object raw) throws java.io.IOException {
        Object doc = raw instanceof String ? whole((String) raw) : null;
        if (!(doc instanceof Map)) throw JsonChecks.DECLINE;
        return ExtendedJson.fields((Map<?, ?>) doc, NULL);
    }

    /** A document's image (field -> canonical text), its typed fields' columns put into {@code columns}. */
    private static LinkedHashMap<String, String> image(LinkedHashMap<String, ExtendedJson.Typed> fields,
                                                       Map<String, Object[]> columns) {
        LinkedHashMap<String, String> image = new LinkedHashMap<>();
        for (Map.Entry<String, ExtendedJson.Typed> e : fields.entrySet()) {
            if (e.getValue().text != null) columns.put(e.getKey(), e.getValue().column(e.getKey()));
            image.put(e.getKey(), e.getValue().text);
        }
        return image;
    }

    /** The document key in the record key, {keyMember: "<_id as Extended JSON>"} (bare or in the envelope): the
     *  key image, its columns (where no document types them) and the primary key (docId; a relational row's key
     *  document: its fields). None where the record has no such key. */
    private void documentKey(Map<String, String> image, Map<String, Object[]> columns, List<String> primary)
            throws java.io.IOException {
        if (recordKey == null || recordKey.length == 0) return;
        Object key = recordKeyValue();
        Object id = key instanceof Map ? ((Map<?, ?>) key).get(keyMember) : null;
        if (id instanceof Num) throw JsonChecks.DECLINE;  // a number the codec reads as a document's text
        if (!(id instanceof String)) return;
        Object value = whole((String) id);
        ExtendedJson.Typed typed = ExtendedJson.typed(value, NULL);
        LinkedHashMap<String, ExtendedJson.Typed> fields;
        if (typed.type.equals("object") && !((Map<?, ?>) value).isEmpty()) {  // a relational row's key
            fields = ExtendedJson.fields((Map<?, ?>) value, NULL);
        } else {
            fields = new LinkedHashMap<>();
            fields.put(docId, typed);
        }
        for (Map.Entry<String, ExtendedJson.Typed> e : fields.entrySet()) {
            image.put(e.getKey(), e.getValue().text);
            columns.putIfAbsent(e.getKey(), e.getValue().column(e.getKey()));
            primary.add(e.getKey());
        }
    }

    // ------------------------------------------------------------------ MongoDB shell-JSON documents (shell_documents)

    /** An oplog entry whose documents are shell-JSON strings (drs_mongo._event): an insert's document (record type
     *  "insert"), a delete's key (any record type), an update's key at shellWhere and either its operators
     *  ("update": the after is the key, the $set fields and the $unset ones as null, which are removed_columns and
     *  vendor "unset") or its whole new document ("replace"). The columns are the fields' BSON types, a later
     *  document's over an earlier one's; an unset field has none. Taken only where the encoder derives the
     *  documents again as they are written (ShellJson): a key field set to its own value, set out of the after's
     *  order, typed otherwise than in the key, or unset, would be written otherwise, and declines. */
    private void shellRow(Map<String, Object> msg, Row row, StringBuilder vendor) {
        Object value = msg.getOrDefault(shellValue, MISSING), where = msg.getOrDefault(shellWhere, MISSING);
        Object kind = msg.getOrDefault(shellRecordType, MISSING);
        if (!(value instanceof String) || !(kind instanceof String)) throw JsonChecks.DECLINE;  // the codec's error
        boolean insert = "INSERT".equals(row.op), delete = "DELETE".equals(row.op);
        boolean replace = !insert && !delete && "replace".equals(kind);
        if (insert ? !"insert".equals(kind) : !delete && !replace && !"update".equals(kind)) {
            throw JsonChecks.DECLINE;
        }
        // an insert or delete with a where: parsed and kept as a fix by the codec; an update without: its error
        if (insert || delete ? where != MISSING && where != NULL : !(where instanceof String)) {
            throw JsonChecks.DECLINE;
        }
        LinkedHashMap<String, Object[]> columns = new LinkedHashMap<>();
        ShellJson.Update update = null;
        if (insert || delete) {
            LinkedHashMap<String, String> image = shellImage(ShellJson.document((String) value), columns);
            if (insert) row.after = image; else row.before = image;
        } else {
            LinkedHashMap<String, ExtendedJson.Typed> key = ShellJson.document((String) where);
            update = replace ? null : ShellJson.update((String) value);
            LinkedHashMap<String, ExtendedJson.Typed> fields = replace ? ShellJson.document((String) value)
                    : update.set;
            Map<String, String> unset = replace ? Map.of() : update.unset;
            for (String name : unset.keySet()) {
                if (key.containsKey(name) || fields.containsKey(name)) throw JsonChecks.DECLINE;
            }
            for (Map.Entry<String, ExtendedJson.Typed> e : fields.entrySet()) {  // the key is written in its type
                ExtendedJson.Typed k = key.get(e.getKey());
                if (k != null && (!k.type.equals(e.getValue().type) || k.number != e.getValue().number)) {
                    throw JsonChecks.DECLINE;
                }
            }
            row.before = shellImage(key, columns);
            LinkedHashMap<String, String> after = replace ? new LinkedHashMap<>() : new LinkedHashMap<>(row.before);
            for (String operator : replace ? List.of("$set") : update.operators) {  // the after in their order
                if (operator.equals("$set")) {
                    after.putAll(shellImage(fields, columns));
                } else {
                    for (String name : unset.keySet()) after.put(name, null);
                }
            }
            if (!replace) {  // $set is written with the after's fields but the unset and the key's unchanged ones
                List<String> written = new ArrayList<>(after.size());
                for (Map.Entry<String, String> e : after.entrySet()) {
                    if (!unset.containsKey(e.getKey()) && !(row.before.containsKey(e.getKey())
                            && java.util.Objects.equals(row.before.get(e.getKey()), e.getValue()))) {
                        written.add(e.getKey());
                    }
                }
                if (!written.equals(new ArrayList<>(fields.keySet()))) throw JsonChecks.DECLINE;
                row.removed = new ArrayList<>(unset.keySet());
            }
            row.after = after;
            row.whereText = (String) where;
        }
        Map<String, String> keyed = insert ? row.after : row.before;
        if (keyed.containsKey(shellId)) {
            row.key.add(shellId);
        } else if (!insert) {
            row.key.addAll(keyed.keySet());
        }
        row.replaces = "replace".equals(kind);  // replaces_row follows the record type, a delete's too
        row.valueText = (String) value;
        // the record type the encoder writes: a delete's empty one as "doc" (then kept as a fix)
        row.recordType = delete && ((String) kind).isEmpty() ? "doc" : (String) kind;
        row.columns = documentColumns(columns, row.before, row.after, false);
        if (vendor.length() > 1) vendor.append(',');
        OrjsonText.quote(vendor, shellRecordType);
        vendor.append(':');
        OrjsonText.quote(vendor, (String) kind);
        if (update == null) return;
        if (!update.unset.isEmpty()) {  // vendor "unset": each field's argument text
            vendor.append(",\"unset\":{");
            boolean first = true;
            for (Map.Entry<String, String> e : update.unset.entrySet()) {
                if (!first) vendor.append(',');
                OrjsonText.quote(vendor, e.getKey());
                vendor.append(':');
                OrjsonText.quote(vendor, e.getValue());
                first = false;
            }
            vendor.append('}');
        }
        if (!update.operators.equals(List.of("$set"))) {  // vendor "operators": the order written, other than $set
            vendor.append(",\"operators\":[");
            for (int k = 0; k < update.operators.size(); k++) {
                if (k > 0) vendor.append(',');
                OrjsonText.quote(vendor, update.operators.get(k));
            }
            vendor.append(']');
        }
    }

    /** A shell document's image, every field's column (null's too, typed "null") put into {@code columns}. */
    private static LinkedHashMap<String, String> shellImage(LinkedHashMap<String, ExtendedJson.Typed> fields,
                                                            Map<String, Object[]> columns) {
        LinkedHashMap<String, String> image = new LinkedHashMap<>();
        for (Map.Entry<String, ExtendedJson.Typed> e : fields.entrySet()) {
            columns.put(e.getKey(), e.getValue().column(e.getKey()));
            image.put(e.getKey(), e.getValue().text);
        }
        return image;
    }

    /** The images' columns (before's names, then after's others): with {@code typedFirst} the typed ones first, then
     *  the untyped (debezium_bson's order), else in the names' order (drs_mongo's). */
    private List<Object[]> documentColumns(Map<String, Object[]> typed, Map<String, String> before,
                                           Map<String, String> after, boolean typedFirst) {
        LinkedHashSet<String> names = new LinkedHashSet<>();
        if (before != null) names.addAll(before.keySet());
        if (after != null) names.addAll(after.keySet());
        List<Object> key = new ArrayList<>(names.size() * 4);
        List<Object[]> out = new ArrayList<>(names.size());
        for (boolean pass : typedFirst ? new boolean[] {true, false} : new boolean[] {true}) {
            for (String name : names) {
                Object[] c = typed.get(name);
                if (typedFirst && (c != null) != pass) continue;
                out.add(c != null ? c : new Object[] {name, null, null, false});
                for (Object part : out.get(out.size() - 1)) key.add(part);
            }
        }
        List<Object[]> shared = columnLists.get(key);
        if (shared != null) return shared;
        if (columnLists.size() > 256) columnLists.clear();
        columnLists.put(key, out);
        return out;
    }

    /** The record key's JSON value, out of a Connect envelope ({"schema": .., "payload": ..}) where it has one; a
     *  key that is no JSON declines. */
    private Object recordKeyValue() throws java.io.IOException {
        JsonChecks.checkRaw(recordKey, 0, recordKey.length);
        Object key = JsonChecks.whole(FACTORY.createParser(recordKey), NULL, NUMBERS);
        if (key instanceof Map && ((Map<?, ?>) key).containsKey(envelopeKey)) {
            boolean wrapped = true;
            for (Object k : ((Map<?, ?>) key).keySet()) wrapped &= k.equals(envelopeKey) || k.equals(envelopeSchema);
            if (wrapped) key = ((Map<?, ?>) key).get(envelopeKey);
        }
        return key;
    }

    /** The sequence of a connector's position (positions): none for a connector without a rule; a value a rule
     *  does not read as the codec does declines. */
    @SuppressWarnings("unchecked")
    private BigDecimal[] position(Map<String, Object> msg) throws java.io.IOException {
        Object source = at(msg, positionsAt);
        if (!(source instanceof Map)) throw JsonChecks.DECLINE;
        Map<String, Object> src = (Map<String, Object>) source;
        Object c = src.getOrDefault(connectorKey, NULL);
        String connector = "";
        if (c instanceof String) {
            for (int i = 0; i < ((String) c).length(); i++) if (((String) c).charAt(i) > 0x7e) throw JsonChecks.DECLINE;
            connector = ((String) c).toLowerCase(java.util.Locale.ROOT);
        } else if (c != NULL) {
            throw JsonChecks.DECLINE;
        }
        Object[] rule = null;
        for (Object[] r : positionRules) {
            boolean matches = false;
            if (!connector.isEmpty()) {
                matches = ((Set<String>) r[1]).contains(connector);
            } else {
                for (Set<String> keys : (List<Set<String>>) r[2]) matches |= src.keySet().containsAll(keys);
            }
            if (matches) {
                rule = r;
                break;
            }
        }
        if (rule == null) return NO_SEQUENCE;  // a connector whose position is not read: ordered by the archive
        BigDecimal[] parts = ConnectorPositions.read((String) rule[0], src, (String[]) rule[3]);
        Object then = src.get(thenKey);
        if (parts.length == 0 || !(then instanceof Num && JsonChecks.integerText(((Num) then).text, 36))) return parts;
        BigDecimal[] out = java.util.Arrays.copyOf(parts, parts.length + 1);
        out[parts.length] = new BigDecimal(((Num) then).text);
        return out;
    }

    /** A message of lists of rows (images "rows" and "row_befores", an UPDATE's befores one per row, or
     *  "row_changes", its changed columns per row): a row each, in order, sharing the columns (the declared ones,
     *  then the rows' others) and the vendor fixes. */
    @SuppressWarnings("unchecked")
    private List<Object[]> listRows(Map<String, Object> msg, Row row) {
        List<Object> rows = rowList(msg, rowsKey), befores = rowList(msg, rowBeforesKey);
        boolean update = "UPDATE".equals(row.op), delete = "DELETE".equals(row.op);
        // an UPDATE's changed columns over its row (Canal's old); other ops' are not read, as the codec's are not
        List<Object> changes = update && rowChangesKey != null ? rowList(msg, rowChangesKey) : List.of();
        List<Object> afters = rows;
        String deleteIn = null;
        boolean inMain = false;
        if (delete) {  // its rows are in one of the lists (both: the codec compares or names them)
            if (!rows.isEmpty() && !befores.isEmpty()) throw JsonChecks.DECLINE;
            List<Object> main = deleteMain.equals("rows") ? rows : befores;
            inMain = !main.isEmpty();
            if (!inMain) deleteIn = deleteMain.equals("rows") ? rowBeforesKey : rowsKey;
            befores = rows.isEmpty() ? befores : rows;
            afters = List.of();
        } else if (update && rowChangesKey != null ? changes.size() != rows.size() || !befores.isEmpty()
                : update ? befores.size() != rows.size() : !befores.isEmpty()) {
            throw JsonChecks.DECLINE;  // an insert's before, or an update's befores not one per row: the codec's
        }
        int n = delete ? befores.size() : afters.size();
        if (n == 0) throw JsonChecks.DECLINE;
        LinkedHashMap<String, Boolean> numbers = new LinkedHashMap<>();
        Map<String, String> imageTyped = new HashMap<>();
        List<LinkedHashMap<String, String>> beforeImages = new ArrayList<>(n), afterImages = new ArrayList<>(n);
        List<LinkedHashMap<String, String>> changed = new ArrayList<>(changes.size());
        for (int i = 0; i < n; i++) {  // each row's before, then its after: the order columns are first seen in
            beforeImages.add(i < befores.size() ? cells((Map<String, Object>) befores.get(i), numbers, imageTyped)
                    : null);
            afterImages.add(delete ? null : cells((Map<String, Object>) afters.get(i), numbers, imageTyped));
            if (i < changes.size()) {  // after its row: names the row lacks the codec warns of
                changed.add(cells((Map<String, Object>) changes.get(i), numbers, imageTyped));
                if (!afterImages.get(i).keySet().containsAll(changed.get(i).keySet())) throw JsonChecks.DECLINE;
            }
        }
        row.columns = declaredColumns(msg, numbers);
        if (keyDeclared) {
            for (String k : row.key) {
                boolean known = false;
                for (Object[] c : row.columns) known |= c[0].equals(k);
                if (!known) throw JsonChecks.DECLINE;  // the codec warns of it
            }
        }
        boolean converting = conversionsWhen == null || msg.containsKey(conversionsWhen);
        Plan plan = plan(row.columns);
        boolean familiesAsked = !declineFamilies.isEmpty() || converting && !conversions.isEmpty();
        if (plan.declines || plan.familyDeclines && familiesAsked) {
            throw JsonChecks.DECLINE;  // a type the codec derives, values it converts, a type name it must read
        }
        // per row: the geometry SRIDs other than 0 of its row, then of its changed columns (those win); the cells of
        // the converted columns made canonical
        List<Map<String, Long>> srids = new ArrayList<>(java.util.Collections.nCopies(n, Map.of()));
        for (int i = 0; converting && !plan.converted.isEmpty() && i < n; i++) {
            LinkedHashMap<String, Long> own = new LinkedHashMap<>(), ofChanged = new LinkedHashMap<>();
            for (int k = 0; k < plan.converted.size(); k++) {
                Object[] c = plan.converted.get(k);
                String name = (String) c[0], how = plan.how.get(k);
                convertCell(how, beforeImages.get(i), name, c, own);
                convertCell(how, afterImages.get(i), name, c, own);
                if (i < changed.size()) convertCell(how, changed.get(i), name, c, ofChanged);
            }
            own.putAll(ofChanged);
            srids.set(i, own);
        }
        if (!changed.isEmpty()) {  // the before: the row with its changed columns' old values
            for (int i = 0; i < n; i++) {
                LinkedHashMap<String, String> before = new LinkedHashMap<>(afterImages.get(i));
                before.putAll(changed.get(i));
                beforeImages.set(i, before);
            }
        }
        row.before = beforeImages.get(0);
        row.after = afterImages.get(0);
        StringBuilder tail = new StringBuilder(64).append('{');
        if (deleteIn != null) {
            OrjsonText.quote(tail, deleteInVendor);
            tail.append(':');
            OrjsonText.quote(tail, deleteIn);
        }
        row.listsHidden = delete && inMain && deleteHidesOther;
        fixes(msg, row, tail);
        String shared = tail.substring(1);
        String tableName = qualified(row);
        List<Object[]> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(new Object[] {row.op, row.database, row.table, tableName, beforeImages.get(i), afterImages.get(i),
                    row.columns, row.key, row.ms, row.sequence, i,
                    rowVendor(row, srids.get(i), i < changed.size() ? changed.get(i) : null, shared), i == 0,
                    row.txn, row.schema});
        }
        return out;
    }

    /** What the columns' types mean for their values, once per declared column list (the lists are shared by the
     *  messages of a declaration): whether they decline, which columns convert and how. */
    private static final class Plan {
        boolean declines;  // a column without its type name or code (types_complete), or of a declined family
        boolean familyDeclines;  // a type name types.family cannot read here: declines where families are asked
        final List<Object[]> converted = new ArrayList<>();
        final List<String> how = new ArrayList<>();
    }

    private final Map<List<Object[]>, Plan> plans = new java.util.IdentityHashMap<>();
    private final Map<List<Object[]>, Object[]> renderedTypes = new java.util.IdentityHashMap<>();

    private Plan plan(List<Object[]> columns) {
        Plan plan = plans.get(columns);
        if (plan != null) return plan;
        plan = new Plan();
        for (Object[] c : columns) {
            // (with jdbc_by_name a code is the message's, checked where the columns are declared)
            plan.declines |= typesComplete && (c[1] == null || ((String) c[1]).isEmpty()
                    || c[2] == null && jdbcByName.isEmpty());
            if (declineFamilies.isEmpty() && conversions.isEmpty()) continue;
            String family;
            try {
                family = valueFamily((String) c[1], (Integer) c[2]);
            } catch (JsonChecks.Decline e) {
                plan.familyDeclines = true;
                continue;
            }
            plan.declines |= declineFamilies.contains(family);
            if (conversions.containsKey(family)) {
                plan.converted.add(c);
                plan.how.add(conversions.get(family));
            }
        }
        if (plans.size() > 256) plans.clear();
        plans.put(columns, plan);
        return plan;
    }

    private void convertCell(String how, Map<String, String> cells, String name, Object[] column,
                             Map<String, Long> srids) {
        String text = cells == null ? null : cells.get(name);
        if (text != null && (convertNumbers || column[3] != Boolean.TRUE)) {
            cells.put(name, CellConversions.convert(how, text, name, (String) column[1], srids));
        }
    }

    /** A row's vendor data, as the codec orders it: the op as written, the geometry SRIDs, the changed columns'
     *  names (old_keys), then what every row of the message shares (where a DELETE's rows were, the fixes). */
    private String rowVendor(Row row, Map<String, Long> srids, Map<String, String> changed, String shared) {
        StringBuilder v = new StringBuilder(64).append('{');
        if (opInVendor != null) {
            OrjsonText.quote(v, opInVendor);
            v.append(':');
            OrjsonText.quote(v, row.vendorOp);
        }
        if (!srids.isEmpty()) {
            if (v.length() > 1) v.append(',');
            v.append("\"srid\":{");
            boolean first = true;
            for (Map.Entry<String, Long> e : srids.entrySet()) {
                if (!first) v.append(',');
                OrjsonText.quote(v, e.getKey());
                v.append(':').append(e.getValue());
                first = false;
            }
            v.append('}');
        }
        if (changed != null) {
            if (v.length() > 1) v.append(',');
            v.append("\"old_keys\":[");
            boolean first = true;
            for (String k : changed.keySet()) {
                if (!first) v.append(',');
                OrjsonText.quote(v, k);
                first = false;
            }
            v.append(']');
        }
        if (!shared.isEmpty()) {
            if (v.length() > 1) v.append(',');
            v.append(shared);
        }
        return v.length() == 1 ? null : v.append('}').toString();
    }

    /** The family a column's values are converted or declined by: types.family of the type name where there is
     *  one, else of the code (DRS); or of both, the code where the name says none (Canal). A geometry's bytes
     *  and a bit(0), which Canal's bytes read as binary, have their own. */
    private String valueFamily(String typeName, Integer code) {
        boolean named = typeName != null && !typeName.isEmpty();
        String family = TypeFamilies.family(typeName, named && !familyByNameThenCode ? null : code);
        if (conversions.containsKey("geometry") && TypeFamilies.geometry(typeName)) return "geometry";
        if (family.equals("bit") && named && conversions.getOrDefault("binary", "").startsWith("latin1_")) {
            // Canal's width: ceil(n / 8) bytes of the first "(n)"; bit(0): none
            java.util.regex.Matcher m = BIT_WIDTH.matcher(typeName);
            if (m.find() && m.group(1).replace("0", "").isEmpty()) return "binary";
        }
        return family;
    }

    private static final Pattern BIT_WIDTH = Pattern.compile("\\(\\s*([0-9]+)\\s*\\)");

    /** A list of row objects at a key; none where it is absent or null. */
    @SuppressWarnings("unchecked")
    private static List<Object> rowList(Map<String, Object> msg, String key) {
        Object v = key == null ? MISSING : msg.getOrDefault(key, MISSING);
        if (v == MISSING || v == NULL) return List.of();
        if (!(v instanceof List)) throw JsonChecks.DECLINE;
        for (Object r : (List<Object>) v) if (!(r instanceof Map)) throw JsonChecks.DECLINE;
        return (List<Object>) v;
    }

    /** An object of column -> value at a role's key (type_names, type_codes); empty where absent or null. */
    @SuppressWarnings("unchecked")
    private Map<String, Object> typeObject(Map<String, Object> msg, String role) {
        String[][] paths = reads.get(role);
        Object v = paths == null ? MISSING : at(msg, paths[0]);
        if (v == MISSING || v == NULL) return Map.of();
        if (!(v instanceof Map)) throw JsonChecks.DECLINE;
        return (Map<String, Object>) v;
    }

    /** The columns the type_names and type_codes objects declare, in their order (a name without a type: null;
     *  a code: an integer literal of 32 bits), then the rows' other columns; number columns as the rows say. */
    private List<Object[]> declaredColumns(Map<String, Object> msg, LinkedHashMap<String, Boolean> numbers) {
        Map<String, Object> names = typeObject(msg, "type_names"), codes = typeObject(msg, "type_codes");
        // a table's messages repeat its declaration: the recent ones are compared in order before any hashing
        for (Object[] seen : recentDeclarations) {
            if (sameEntries(names, (Map<?, ?>) seen[0]) && sameEntries(codes, (Map<?, ?>) seen[1])
                    && sameEntries(numbers, (Map<?, ?>) seen[2])) {
                @SuppressWarnings("unchecked") List<Object[]> columns = (List<Object[]>) seen[3];
                return columns;
            }
        }
        List<Object[]> columns = declare(names, codes, numbers);
        if (recentDeclarations.size() == 8) recentDeclarations.remove(7);
        recentDeclarations.add(0, new Object[] {names, codes, new LinkedHashMap<>(numbers), columns});
        return columns;
    }

    private final List<Object[]> recentDeclarations = new ArrayList<>(8);

    /** Whether two maps hold equal entries in the same order (texts, number literals, null). */
    private static boolean sameEntries(Map<?, ?> a, Map<?, ?> b) {
        if (a.size() != b.size()) return false;
        java.util.Iterator<? extends Map.Entry<?, ?>> x = a.entrySet().iterator(), y = b.entrySet().iterator();
        while (x.hasNext()) {
            Map.Entry<?, ?> e = x.next(), f = y.next();
            Object v = e.getValue(), w = f.getValue();
            if (!e.getKey().equals(f.getKey()) || !(v == w || v instanceof Num && w instanceof Num
                    && ((Num) v).text.equals(((Num) w).text) || v != null && !(v instanceof Num) && v.equals(w))) {
                return false;
            }
        }
        return true;
    }

    private List<Object[]> declare(Map<String, Object> names, Map<String, Object> codes,
                                   LinkedHashMap<String, Boolean> numbers) {
        LinkedHashMap<String, Boolean> ordered = new LinkedHashMap<>();
        Map<String, String> types = new HashMap<>();
        Map<String, Integer> jdbc = new HashMap<>();
        for (Map.Entry<String, Object> e : names.entrySet()) {
            if (e.getValue() != NULL && !(e.getValue() instanceof String)) throw JsonChecks.DECLINE;
            if (e.getValue() != NULL) types.put(e.getKey(), (String) e.getValue());
            ordered.put(e.getKey(), numbers.get(e.getKey()) == Boolean.TRUE);
        }
        for (Map.Entry<String, Object> e : codes.entrySet()) {
            Object v = e.getValue();
            if (v != NULL) {
                if (!(v instanceof Num) || !JsonChecks.integerText(((Num) v).text, Integer.MAX_VALUE)
                        || ((Num) v).text.length() > 11) throw JsonChecks.DECLINE;
                long code = Long.parseLong(((Num) v).text);
                if (code != (int) code) throw JsonChecks.DECLINE;  // the record's int32
                jdbc.put(e.getKey(), (int) code);
            }
            ordered.putIfAbsent(e.getKey(), numbers.get(e.getKey()) == Boolean.TRUE);
        }
        numbers.forEach((name, number) -> ordered.putIfAbsent(name, number == Boolean.TRUE));
        if (!jdbcByName.isEmpty()) {  // the codes are the vendor's own: a column's JDBC type is its name's
            if (typesComplete) {
                for (String name : ordered.keySet()) if (!jdbc.containsKey(name)) throw JsonChecks.DECLINE;
            }
            jdbc.clear();
            for (Map.Entry<String, String> e : types.entrySet()) {
                Integer code = jdbcOfName(e.getValue());
                if (code != null) jdbc.put(e.getKey(), code);
            }
        }
        return columns(ordered, types, jdbc);
    }

    /** A type name's base, as the codec looks it up (drs_gaussdb.pg_base): parenthesized parts and repeated
     *  blanks removed, lower case. A name of other than printable ASCII declines (the codec's whitespace and case
     *  rules are Unicode's). */
    private static String typeBase(String name) {
        for (int i = 0; i < name.length(); i++) {
            if (name.charAt(i) < 0x20 || name.charAt(i) > 0x7e) throw JsonChecks.DECLINE;
        }
        String base = PARENTHESIZED.matcher(name).replaceAll("").replaceAll(" +", " ").trim();
        return base.toLowerCase(java.util.Locale.ROOT);
    }

    private static final Pattern PARENTHESIZED = Pattern.compile("\\(.*?\\)");

    /** jdbc_by_name's JDBC type of a type name, or null. */
    private Integer jdbcOfName(String name) {
        if (name.isEmpty()) return null;
        String base = typeBase(name);
        Integer code = jdbcByName.get(base);
        if (code != null) return code;
        for (Object[] rule : jdbcNameRules) {
            String text = (String) rule[1];
            if ("suffix".equals(rule[0]) ? base.endsWith(text) : base.startsWith(text)) return (Integer) rule[2];
        }
        return null;
    }

    /** Whether a value meets a required field's need: present, of one of its JSON types (an integer is a number
     *  too), not empty where it must not be (Need.problem). */
    @SuppressWarnings("unchecked")
    private static boolean satisfies(Object v, Set<Object> types, boolean nonempty) {
        String type = v == MISSING ? null : v == NULL ? "null" : v instanceof Boolean ? "boolean"
                : v instanceof Num ? (JsonChecks.integerText(((Num) v).text, Integer.MAX_VALUE) ? "integer" : "number")
                : v instanceof String ? "string" : v instanceof List ? "array" : v instanceof Map ? "object" : null;
        if (type == null || !(types.contains(type) || type.equals("integer") && types.contains("number"))) {
            return false;
        }
        return !nonempty || !(v instanceof String && ((String) v).isEmpty() || v instanceof List
                && ((List<Object>) v).isEmpty() || v instanceof Map && ((Map<String, Object>) v).isEmpty());
    }

    /** The columns a list of {"name", "type"} objects declares (column_specs), in its order; the images' cells say
     *  which are number columns. With columns_exact, the images' columns must be those and the key among them
     *  (the codec warns otherwise). */
    @SuppressWarnings("unchecked")
    private List<Object[]> specColumns(Map<String, Object> msg, Row row, LinkedHashMap<String, Boolean> numbers,
                                       Map<String, LinkedHashMap<String, String>> images) {
        Object specs = at(msg, reads.get("column_specs")[0]);
        LinkedHashMap<String, Boolean> ordered = new LinkedHashMap<>();
        Map<String, String> types = new HashMap<>();
        if (specs != MISSING && specs != NULL) {
            if (!(specs instanceof List)) throw JsonChecks.DECLINE;
            for (Object spec : (List<Object>) specs) {
                Object name = spec instanceof Map ? ((Map<String, Object>) spec).get("name") : null;
                Object type = spec instanceof Map ? ((Map<String, Object>) spec).getOrDefault("type", NULL) : null;
                if (!(name instanceof String) || !(type == NULL || type instanceof String)
                        || ordered.containsKey(name)) {
                    throw JsonChecks.DECLINE;
                }
                ordered.put((String) name, numbers.get(name) == Boolean.TRUE);
                if (type != NULL) types.put((String) name, (String) type);
            }
        }
        if (columnsExact) {
            Set<String> named = new HashSet<>();
            for (Map<String, String> cells : images.values()) named.addAll(cells.keySet());
            if (!named.equals(ordered.keySet()) || !named.containsAll(row.key)) {
                throw JsonChecks.DECLINE;
            }
        }
        numbers.forEach((name, number) -> ordered.putIfAbsent(name, number == Boolean.TRUE));
        return columns(ordered, types, Map.of());
    }

    /** Whether a name begins or ends with a character Python's strip() might take (ASCII blanks and controls, and
     *  anything beyond ASCII, to be sure). */
    private static boolean blankEnds(String name) {
        if (name == null || name.isEmpty()) return false;
        char first = name.charAt(0), last = name.charAt(name.length() - 1);
        return first <= 0x20 || first >= 0x7f || last <= 0x20 || last >= 0x7f;
    }

    /** A sequence component: an integer literal within the record's 38 digits. */
    private static BigDecimal component(String text) {
        if (!JsonChecks.integerText(text, Integer.MAX_VALUE) || text.length() > 38) throw JsonChecks.DECLINE;
        return new BigDecimal(new java.math.BigInteger(text));
    }

    /** A UTC wall-clock stamp as epoch milliseconds (the fraction cut to milliseconds); declines what is not a
     *  date and time of years 1-9999. */
    private static long stampMillis(String text, Pattern pattern) {
        java.util.regex.Matcher m = pattern.matcher(text);
        if (!m.matches()) throw JsonChecks.DECLINE;
        int year = Integer.parseInt(m.group(1));
        if (year < 1) throw JsonChecks.DECLINE;
        long seconds = CellConversions.epochSeconds(m, java.time.ZoneOffset.UTC);
        String fraction = m.groupCount() < 7 || m.group(7) == null ? "0" : m.group(7);
        return seconds * 1000L + Integer.parseInt((fraction + "00").substring(0, 3));
    }

    /** Epoch milliseconds as "YYYY-MM-DD HH:MM:SS.ffffff" (microseconds), as the encoder writes a stamp. */
    private static String stampText(long ms) {
        java.time.LocalDateTime t = java.time.LocalDateTime.ofEpochSecond(Math.floorDiv(ms, 1000L),
                (int) Math.floorMod(ms, 1000L) * 1_000_000, java.time.ZoneOffset.UTC);
        StringBuilder b = new StringBuilder(26);
        padded(b, t.getYear(), 4).append('-');
        padded(b, t.getMonthValue(), 2).append('-');
        padded(b, t.getDayOfMonth(), 2).append(' ');
        padded(b, t.getHour(), 2).append(':');
        padded(b, t.getMinute(), 2).append(':');
        padded(b, t.getSecond(), 2).append('.');
        return padded(b, t.getNano() / 1000, 6).toString();
    }

    /** {@code v} as String.format's %0{width}d writes it (a minus sign counts in the width), without a Formatter
     *  per value. */
    private static StringBuilder padded(StringBuilder b, int v, int width) {
        String digits = Long.toString(Math.abs((long) v));
        if (v < 0) {
            b.append('-');
            width--;
        }
        for (int i = digits.length(); i < width; i++) b.append('0');
        return b.append(digits);
    }

    /** The primary key: a list of names, or one text of names joined by the separator. */
    @SuppressWarnings("unchecked")
    private void readKey(Map<String, Object> msg, Row row) {
        String[][] paths = reads.get("primary_key");
        if (paths == null) return;
        String[] path = paths[0];
        Object v = at(msg, path);
        if (v == MISSING || v == NULL) return;
        if (keySeparator != null) {
            if (!(v instanceof String)) throw JsonChecks.DECLINE;
            if (!((String) v).isEmpty()) {
                for (String k : ((String) v).split(Pattern.quote(keySeparator), -1)) row.key.add(k);
            }
            return;
        }
        if (!(v instanceof List)) throw JsonChecks.DECLINE;
        for (Object name : (List<Object>) v) {
            if (!(name instanceof String)) throw JsonChecks.DECLINE;
            row.key.add((String) name);
        }
    }

    /** before/after from the images the op carries (others decline): an UPDATE's changed columns over its row,
     *  their names kept as vendor old_keys; or its changed columns with its before apart; or full images. */
    private void placeImages(Row row, Map<String, LinkedHashMap<String, String>> images, StringBuilder vendor) {
        LinkedHashMap<String, String> full = images.get("row");
        boolean update = "UPDATE".equals(row.op), delete = "DELETE".equals(row.op);
        if (imageRoles.contains("update_before")) {  // a row (an UPDATE's changed columns), its before apart
            if (full == null) throw JsonChecks.DECLINE;
            row.before = update ? images.get("update_before") : delete ? full : null;
            row.after = delete ? null : full;
            // an update's columns the before lacks: the codec writes a warning
            if (update && (row.before == null || !row.before.keySet().containsAll(full.keySet()))) {
                throw JsonChecks.DECLINE;
            }
            return;
        }
        if (full != null || images.containsKey("changed")) {  // a row and its changed columns (Maxwell)
            LinkedHashMap<String, String> changed = images.get("changed");
            if (full == null || changed != null && !update) throw JsonChecks.DECLINE;
            row.before = delete ? full : null;
            row.after = delete ? null : full;
            if (update) {
                LinkedHashMap<String, String> before = new LinkedHashMap<>(full);
                if (vendor.length() > 1) vendor.append(',');
                vendor.append("\"old_keys\":[");
                if (changed != null) {
                    boolean first = true;
                    for (Map.Entry<String, String> e : changed.entrySet()) {
                        before.put(e.getKey(), e.getValue());
                        if (!first) vendor.append(',');
                        OrjsonText.quote(vendor, e.getKey());
                        first = false;
                    }
                }
                vendor.append(']');
                row.before = before;
            }
            return;
        }
        row.before = images.get("before");  // full images (OMS, GoldenGate)
        row.after = images.get("after");
        if ((row.before != null) != (update || delete) || (row.after != null) != !delete) throw JsonChecks.DECLINE;
    }

    /** The cells of a row object as text, noting each column's kind in numbers; the columns its types object
     *  types (image_types) follow its cells', their types noted where no image before typed them. */
    @SuppressWarnings("unchecked")
    private LinkedHashMap<String, String> cells(Map<String, Object> image, Map<String, Boolean> numbers,
                                                Map<String, String> types) {
        LinkedHashMap<String, String> cells = new LinkedHashMap<>(image.size() * 2);
        Map<String, Object> typed = Map.of();
        for (Map.Entry<String, Object> e : image.entrySet()) {
            Object v = e.getValue();
            if (typesKey != null && typesKey.equals(e.getKey())) {
                if (!(v instanceof Map)) throw JsonChecks.DECLINE;  // the codec names it
                typed = (Map<String, Object>) v;
                continue;
            }
            String text;
            boolean number;
            if (v == NULL) {
                cells.put(e.getKey(), null);
                if (nullCellsDeclare) numbers.putIfAbsent(e.getKey(), null);
                continue;
            } else if (v instanceof Num) {
                text = ((Num) v).text;
                number = true;
            } else if (v instanceof String) {
                text = (String) v;
                number = false;
            } else {
                throw JsonChecks.DECLINE;  // true/false, JSON objects and arrays: kept per cell, or an error
            }
            Boolean seen = numbers.get(e.getKey());
            if (seen == null) {
                numbers.put(e.getKey(), number);
            } else if (seen != number) {
                throw JsonChecks.DECLINE;
            }
            cells.put(e.getKey(), text);
        }
        for (Map.Entry<String, Object> e : typed.entrySet()) {
            Object type = e.getValue() instanceof Map ? ((Map<String, Object>) e.getValue()).get(typeMember) : null;
            if (!(type instanceof String)) throw JsonChecks.DECLINE;  // the codec names it
            numbers.putIfAbsent(e.getKey(), null);
            types.putIfAbsent(e.getKey(), (String) type);
        }
        return cells;
    }

    /** The images whose types object is missing or differs from the one the columns give, in typesOrder:
     *  "vendor key":{"image key":null or the object's JSON text}. */
    private void imageTypes(Map<String, Boolean> numbers, Map<String, String> types, Map<String, Object> written,
                            StringBuilder vendor) {
        boolean opened = false;
        for (String key : typesOrder) {
            Object original = written.get(key);
            if (original == null) continue;  // no such image
            // the same object as the columns give is the same JSON text: only a differing one is written
            if (sameTypes(original, numbers, types)) continue;
            if (!opened) {
                if (vendor.length() > 1) vendor.append(',');
                OrjsonText.quote(vendor, typesVendor);
                vendor.append(":{");
                opened = true;
            } else {
                vendor.append(',');
            }
            OrjsonText.quote(vendor, key);
            vendor.append(':');
            if (original == MISSING) {
                vendor.append("null");
            } else {
                StringBuilder text = new StringBuilder();
                OrjsonText.json(text, original, NULL);
                OrjsonText.quote(vendor, text.toString());
            }
        }
        if (opened) vendor.append('}');
    }

    /** Whether an image's types object is the one its columns give, {name: {typeMember: type}} for each typed
     *  column in order: what comparing its JSON text with that object's would say. */
    @SuppressWarnings("unchecked")
    private boolean sameTypes(Object original, Map<String, Boolean> numbers, Map<String, String> types) {
        if (!(original instanceof Map)) return false;
        java.util.Iterator<Map.Entry<String, Object>> entries = ((Map<String, Object>) original).entrySet().iterator();
        for (String name : numbers.keySet()) {
            String type = types.get(name);
            if (type == null) continue;
            if (!entries.hasNext()) return false;
            Map.Entry<String, Object> e = entries.next();
            if (!e.getKey().equals(name) || !(e.getValue() instanceof Map)) return false;
            Map<String, Object> member = (Map<String, Object>) e.getValue();
            if (member.size() != 1 || !type.equals(member.get(typeMember))) return false;
        }
        return !entries.hasNext();
    }

    private List<Object[]> columns(LinkedHashMap<String, Boolean> numbers, Map<String, String> types,
                                   Map<String, Integer> jdbc) {
        List<Object> key = new ArrayList<>(numbers.size() * 4);
        numbers.forEach((k, v) -> {
            key.add(k);
            key.add(v == Boolean.TRUE);
            key.add(types.get(k));
            key.add(jdbc.get(k));
        });
        List<Object[]> columns = columnLists.get(key);
        if (columns == null) {
            columns = new ArrayList<>(numbers.size());
            for (Map.Entry<String, Boolean> e : numbers.entrySet()) {
                columns.add(new Object[] {e.getKey(), types.get(e.getKey()), jdbc.get(e.getKey()),
                        e.getValue() == Boolean.TRUE});
            }
            if (columnLists.size() > 256) columnLists.clear();
            columnLists.put(key, columns);
        }
        return columns;
    }

    // ------------------------------------------------------------------------------------- what the encoder writes

    /** The value the encoder writes for a rendering, or MISSING where it writes no such key. */
    private Object written(String rendering, Row row) {
        switch (rendering) {
            case "null": return NULL;
            case "millis_number_or_null": return row.ms == null ? NULL : new Num(Long.toString(row.ms));
            case "record_millis": {  // the record's timestamp where it has one, else the event time's
                Long ms = recordMillis != null ? recordMillis : row.ms;
                return ms == null ? NULL : new Num(Long.toString(ms));
            }
            case "database_or_empty": return row.database == null ? "" : row.database;
            case "key_list_or_null": return row.key.isEmpty() ? NULL : new ArrayList<Object>(row.key);
            case "millis_number": return row.ms == null ? MISSING : new Num(Long.toString(row.ms));
            case "object_if_time": return row.ms == null ? NULL : OBJECT;  // an object of the time's keys, or null
            case "sequence_text": return row.sequence.length == 1 ? row.sequence[0].toPlainString()
                    : sequenceNone != null ? sequenceNone : MISSING;
            case "column_specs": {
                List<Object> out = new ArrayList<>(row.columns.size());
                for (Object[] c : row.columns) {
                    LinkedHashMap<String, Object> spec = new LinkedHashMap<>();
                    spec.put("name", c[0]);
                    spec.put("type", c[1] == null ? NULL : c[1]);
                    out.add(spec);
                }
                return out;
            }
            case "key_list_or_empty": return new ArrayList<Object>(row.key);
            case "type_names": case "type_codes": {  // the declared types as the encoder writes them, once a list
                Object[] rendered = renderedTypes.get(row.columns);
                if (rendered == null) {
                    LinkedHashMap<String, Object> names = new LinkedHashMap<>(), codes = new LinkedHashMap<>();
                    for (Object[] c : row.columns) {
                        if (c[1] != null && !((String) c[1]).isEmpty()) names.put((String) c[0], c[1]);
                        Object code = c[2];
                        if (!codesByName.isEmpty()) {  // the vendor's own code of the name, else its JDBC type
                            Integer own = c[1] == null || ((String) c[1]).isEmpty() ? null
                                    : codesByName.get(typeBase((String) c[1]));
                            code = own != null ? own : c[2] != null ? c[2] : 12;  // else VARCHAR
                        }
                        if (code != null) codes.put((String) c[0], new Num(code.toString()));
                    }
                    if (renderedTypes.size() > 256) renderedTypes.clear();
                    renderedTypes.put(row.columns, rendered = new Object[] {names, codes});
                }
                return rendered[rendering.equals("type_names") ? 0 : 1];
            }
            case "op": return opValues.get(row.op);
            case "table": return row.table;
            case "database": {
                String db = row.tenant != null && row.database != null ? row.tenant + "." + row.database : row.database;
                return db == null ? NULL : db;
            }
            case "seconds_number": return row.ms == null ? MISSING
                    : new Num(Long.toString(Math.floorDiv(row.ms, 1000L)));
            case "seconds_text": return row.ms == null ? MISSING : Long.toString(Math.floorDiv(row.ms, 1000L));
            case "seconds_text_or_null": return row.ms == null ? NULL : Long.toString(Math.floorDiv(row.ms, 1000L));
            case "sequence_number": return row.sequence.length == 1 ? new Num(row.sequence[0].toPlainString())
                    : MISSING;
            case "sequence_digits20": {  // one non-negative component, at least 20 digits (GoldenGate's pos)
                if (row.sequence.length != 1 || row.sequence[0].signum() < 0) return MISSING;
                String digits = row.sequence[0].toPlainString();
                return "0".repeat(Math.max(0, 20 - digits.length())) + digits;
            }
            case "stamp_micros": return row.ms == null ? MISSING : stampText(row.ms);
            case "stamp_seconds": {  // strftime("%Y-%m-%dT%H:%M:%S"), whose year below 1000 is not padded
                if (row.ms == null) return MISSING;
                String text = stampText(row.ms);
                if (text.startsWith("0")) throw JsonChecks.DECLINE;
                return text.substring(0, 10) + "T" + text.substring(11, 19);
            }
            case "sequence_first_text": return row.sequence.length == 1 || row.sequence.length == 2
                    ? row.sequence[0].toPlainString() : MISSING;
            case "sequence_second_number": return row.sequence.length == 2 ? new Num(row.sequence[1].toPlainString())
                    : MISSING;
            case "sequence_second_of_three": return row.sequence.length == 3
                    ? new Num(row.sequence[1].toPlainString()) : MISSING;
            case "before_document":  // the document read, where the encoder writes a before
                return "INSERT".equals(row.op) || "SNAPSHOT".equals(row.op) || row.beforeFromKey
                        || row.beforeDocument == null ? NULL : row.beforeDocument;
            case "after_document":
                return ("INSERT".equals(row.op) || "SNAPSHOT".equals(row.op) || row.replaces)
                        && row.afterDocument != null ? row.afterDocument : NULL;
            case "update_description": return row.description == null ? NULL : row.description;
            case "shell_value": return row.valueText;  // taken only where the encoder writes it as it is
            case "shell_where": return row.whereText == null ? NULL : row.whereText;
            case "record_type": return row.recordType;
            case "row_id": {  // the qualified table, "-", the key's values (the before of an update)
                boolean inserted = "INSERT".equals(row.op) || "SNAPSHOT".equals(row.op);
                Map<String, String> image = inserted ? row.after : row.before;
                StringBuilder b = new StringBuilder((String) written("qualified_table", row)).append('-');
                for (int i = 0; i < row.key.size(); i++) {
                    if (i > 0) b.append(keySeparator);
                    String v = image == null ? null : image.get(row.key.get(i));
                    if (v != null) b.append(v);
                }
                return b.toString();
            }
            case "qualified_table": return qualified(row);
            case "schema": return row.schema == null ? NULL : row.schema;
            case "schema_if_any": return row.schema == null ? MISSING : row.schema;
            case "transaction_object": {  // {"id": the transaction}, where there is one
                if (row.txn == null) return MISSING;
                Map<String, Object> t = new LinkedHashMap<>();
                t.put("id", row.txn);
                return t;
            }
            case "transaction_text": return row.txn == null ? MISSING : row.txn;
            case "transaction_number": return row.txn == null || !JsonChecks.digits(row.txn) ? MISSING
                    : new Num(new java.math.BigInteger(row.txn).toString());
            case "key_list": return row.key.isEmpty() ? MISSING : new ArrayList<Object>(row.key);
            case "key_text": return String.join(keySeparator, row.key);
            case "key_values": {
                Map<String, String> image = "DELETE".equals(row.op) ? row.before : row.after;
                StringBuilder b = new StringBuilder();
                for (int i = 0; i < row.key.size(); i++) {
                    if (i > 0) b.append(keySeparator);
                    String v = image == null ? null : image.get(row.key.get(i));
                    if (v != null) b.append(v);
                }
                return b.toString();
            }
            default:
                if (constants.containsKey(rendering)) return constants.get(rendering);
                throw new IllegalArgumentException("unknown rendering " + rendering);
        }
    }

    /** database.schema.table, of the levels it has (Event.qualified_table). */
    private static String qualified(Row row) {
        StringBuilder b = new StringBuilder();
        for (String part : new String[] {row.database, row.schema, row.table}) {
            if (part == null || part.isEmpty()) continue;
            if (b.length() > 0) b.append('.');
            b.append(part);
        }
        return b.toString();
    }

    /** json_fix.derive_fix over json_fix.fix_paths: the message's keys then the written ones, the nested objects
     *  key by key, the images skipped; appended to vendor as "fix":[...]. */
    @SuppressWarnings("unchecked")
    private void fixes(Map<String, Object> msg, Row row, StringBuilder vendor) {
        int start = vendor.length();
        if (leafPaths) {
            leaves(vendor, start, "", msg, row);
            if (vendor.length() > start) vendor.append(']');
            return;
        }
        for (String key : msg.keySet()) fixAt(msg, key, row, vendor, start);
        for (String key : children.getOrDefault("", new LinkedHashSet<>())) {  // written keys the message lacks
            if (!msg.containsKey(key)) fixAt(msg, key, row, vendor, start);
        }
        if (vendor.length() > start) vendor.append(']');
    }

    /** The fixes of one top-level key (see fixes). */
    @SuppressWarnings("unchecked")
    private void fixAt(Map<String, Object> msg, String key, Row row, StringBuilder vendor, int start) {
        String imageRole = docVendor == null ? imageRoleAt.get(key) : null;  // documents: compared as written
        if (imageRole != null && (imageRole.equals("rows") || imageRole.equals("row_befores"))) {
            if (row.listsHidden || msg.get(key) instanceof List && !((List<?>) msg.get(key)).isEmpty()) return;
        } else if (imageRole != null && connect != null) {  // compared where the event has no such image
            if (("before".equals(imageRole) ? row.before : row.after) != null) return;
        } else if (imageRole != null && !(unwrittenImages && !imageWritten(key, row.op))) {
            return;
        }
        undotted(key);
        Object original = msg.getOrDefault(key, MISSING);
        if (nested.contains(key) && original instanceof Map) {
            Map<String, Object> inner = (Map<String, Object>) original;
            Map<String, String> under = writesUnder.getOrDefault(key, Map.of());
            for (String sub : inner.keySet()) {
                undotted(sub);
                compareUnder(vendor, start, key, sub, inner.get(sub), under, row);
            }
            for (String sub : under.keySet()) {  // written keys the object lacks
                if (!inner.containsKey(sub)) compareUnder(vendor, start, key, sub, MISSING, under, row);
            }
        } else {
            if (nested.contains(key)) throw JsonChecks.DECLINE;  // compared whole: rare, left to Python
            String rendering = writes.get(key);
            compareWith(vendor, start, new String[] {key}, original,
                    rendering == null ? MISSING : written(rendering, row));
        }
    }

    /** json_fix.derive_fix over leaf_paths: the keys of both sides at a level (the message's first), into the
     *  objects both sides have there, the images' objects skipped. */
    @SuppressWarnings("unchecked")
    private void leaves(StringBuilder vendor, int start, String prefix, Map<String, Object> original, Row row) {
        Map<String, String> paths = pathsUnder(prefix);
        for (String key : original.keySet()) leaf(vendor, start, prefix, paths, key, original, row);
        for (String key : children.getOrDefault(prefix, NO_KEYS)) {  // written keys the message lacks
            if (!original.containsKey(key)) leaf(vendor, start, prefix, paths, key, original, row);
        }
    }

    @SuppressWarnings("unchecked")
    private void leaf(StringBuilder vendor, int start, String prefix, Map<String, String> paths, String key,
                      Map<String, Object> original, Row row) {
        String path = paths.get(key);
        if (path == null) {
            undotted(key);
            path = prefix.isEmpty() ? key : prefix + "." + key;
            if (paths.size() < 256) paths.put(key, path);
        }
        if (imageParents.contains(path)) return;  // the event itself
        Object o = original.getOrDefault(key, MISSING), d = derived(path, row);
        if (o instanceof Map && d == OBJECT) {
            leaves(vendor, start, path, (Map<String, Object>) o, row);
        } else {
            compareWith(vendor, start, path, o, d == OBJECT ? object(path, row) : d);
        }
    }

    /** Declines a message with a key that holds a dot: the declaration's key paths are dotted, so such a key would
     *  be taken for a path ("checkpoi.tTime" fixed as checkpoi -> tTime, written back as another object), which
     *  Python's key tuples keep apart. */
    private static void undotted(String key) {
        if (key.indexOf('.') >= 0) throw JsonChecks.DECLINE;
    }

    private static final LinkedHashSet<String> NO_KEYS = new LinkedHashSet<>();
    // key paths by their prefix and last key, made once: a message's keys repeat, and a path made anew would be
    // hashed anew at every lookup (the keys' own hashes are kept: Jackson interns them); bounded, as the keys of
    // the messages are not
    private final Map<String, Map<String, String>> keyPaths = new HashMap<>();

    private Map<String, String> pathsUnder(String prefix) {
        Map<String, String> paths = keyPaths.get(prefix);
        if (paths == null) {
            if (keyPaths.size() >= 256) keyPaths.clear();
            keyPaths.put(prefix, paths = new HashMap<>());
        }
        return paths;
    }

    /** What the encoder writes at a key path: a rendering's value, OBJECT where it writes an object of keys. */
    private Object derived(String path, Row row) {
        String rendering = writes.get(path);
        if (rendering != null) return written(rendering, row);
        return children.containsKey(path) ? OBJECT : MISSING;
    }

    /** The object the encoder writes at a key path, built. */
    private Map<String, Object> object(String path, Row row) {
        LinkedHashMap<String, Object> out = new LinkedHashMap<>();
        for (String key : children.get(path)) {
            Object v = derived(path + "." + key, row);
            if (v != MISSING) out.put(key, v == OBJECT ? object(path + "." + key, row) : v);
        }
        return out;
    }

    /** Whether the encoder writes the image at this key for the op: before for an UPDATE or DELETE, after for all
     *  but a DELETE, an UPDATE's changed columns or before apart for an UPDATE, the row always. */
    private boolean imageWritten(String key, String op) {
        switch (imageRoleAt.get(key)) {
            case "before": return "UPDATE".equals(op) || "DELETE".equals(op);
            case "after": return !"DELETE".equals(op);
            case "changed": case "update_before": return "UPDATE".equals(op);
            default: return true;
        }
    }

    private void compareUnder(StringBuilder vendor, int start, String key, String sub, Object original,
                              Map<String, String> under, Row row) {
        String rendering = under.get(sub);
        compareWith(vendor, start, new String[] {key, sub}, original, rendering == null ? MISSING
                : written(rendering, row));
    }

    /** The same, at a dotted key path (split only where there is a fix). */
    private void compareWith(StringBuilder vendor, int start, String path, Object original, Object derived) {
        if (original == MISSING ? derived != MISSING : derived == MISSING || !same(original, derived)) {
            compareWith(vendor, start, path.split("\\."), original, derived);
        }
    }

    private void compareWith(StringBuilder vendor, int start, String[] path, Object original, Object derived) {
        if (original == MISSING) {
            if (derived == MISSING) return;
            fix(vendor, start, path);
            vendor.append("null]");
        } else if (derived == MISSING || !same(original, derived)) {
            fix(vendor, start, path);
            StringBuilder literal = new StringBuilder();
            OrjsonText.json(literal, original, NULL);
            OrjsonText.quote(vendor, literal.toString());
            vendor.append(']');
        }
    }

    /** json_fix.same_json of a message's value and a written one (text, numbers by literal, null, lists). */
    @SuppressWarnings("unchecked")
    private static boolean same(Object a, Object b) {
        if (a instanceof String) return a.equals(b);
        if (a instanceof Num) return b instanceof Num && ((Num) a).text.equals(((Num) b).text);
        if (a == NULL) return b == NULL;
        if (a instanceof Boolean) return a.equals(b);
        if (a instanceof Map && b instanceof Map) {  // key order aside, as same_json compares
            Map<String, Object> x = (Map<String, Object>) a, y = (Map<String, Object>) b;
            if (x.size() != y.size()) return false;
            for (Map.Entry<String, Object> e : x.entrySet()) {
                if (!y.containsKey(e.getKey()) || !same(e.getValue(), y.get(e.getKey()))) return false;
            }
            return true;
        }
        if (a instanceof List && b instanceof List) {
            List<Object> x = (List<Object>) a, y = (List<Object>) b;
            if (x.size() != y.size()) return false;
            for (int i = 0; i < x.size(); i++) if (!same(x.get(i), y.get(i))) return false;
            return true;
        }
        return false;
    }

    private void fix(StringBuilder vendor, int start, String[] path) {
        if (vendor.length() == start) {
            vendor.append(start > 1 ? ",\"fix\":[" : "\"fix\":[");
        } else {
            vendor.append(',');
        }
        if (fixKeys) {  // [key, literal] (DRS's header fixes)
            vendor.append('[');
            OrjsonText.quote(vendor, path[0]);
            vendor.append(',');
            return;
        }
        vendor.append("[[");
        for (int i = 0; i < path.length; i++) {
            if (i > 0) vendor.append(',');
            OrjsonText.quote(vendor, path[i]);
        }
        vendor.append("],");
    }
}
