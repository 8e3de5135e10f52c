package cdcreplay.codecs;

import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * {@code cdc_codecs.types.family} for ASCII type names (anything else declines: the Python codec decides), shared
 * by the JVM decodes that convert or decline values by their column's type family.
 */
public final class TypeFamilies {
    private TypeFamilies() {}

    private static final String[][] NAME_FAMILY = {
        {"^(tinyint|smallint|mediumint|int|integer|bigint|int\\d+|uint\\d*|long|serial|bigserial|smallserial|year)\\b", "int"},
        {"^(decimal|numeric|number|dec|money)\\b", "decimal"},
        {"^(float|double|real|binary_float|binary_double|float\\d)\\b", "float"},
        {"^(bit)\\b", "bit"},
        {"^(bool|boolean)\\b", "bool"},
        {"^(tinyblob|blob|mediumblob|longblob|binary|varbinary|bytea|bytes|raw|long raw)\\b", "binary"},
        {"^(date)$", "date"},
        {"^(time)(\\(\\d\\))?$", "time"},
        {"^(datetime|timestamp without time zone)\\b", "datetime"},
        {"^(timestamp with local time zone|timestamptz|timestamp with time zone)\\b", "zoned"},
        {"^(timestamp)(\\(\\d\\))?$", "timestamp"},
        {"^(json|jsonb)\\b", "json"},
        {"^(tinytext|text|mediumtext|longtext|enum|set|geometry|point|linestring|polygon|multipoint|multilinestring|multipolygon|geometrycollection)\\b", "string"},
    };
    private static final Pattern[] PATTERNS = new Pattern[NAME_FAMILY.length];
    static {
        for (int i = 0; i < NAME_FAMILY.length; i++) PATTERNS[i] = Pattern.compile(NAME_FAMILY[i][0]);
    }
    private static final Pattern UNSIGNED_INT = Pattern.compile("^(tinyint|smallint|mediumint|int|integer|bigint)");
    private static final Map<Integer, String> JDBC_FAMILY = new HashMap<>();
    static {
        int[] codes = {-7, -6, 5, 4, -5, 6, 7, 8, 2, 3, 91, 92, 93, -2, -3, -4, 2004, 16, 2013, 2014};
        String[] fams = {"bit", "int", "int", "int", "int", "float", "float", "float", "decimal", "decimal",
            "date", "time", "datetime", "binary", "binary", "binary", "binary", "bool", "time", "zoned"};
        for (int i = 0; i < codes.length; i++) JDBC_FAMILY.put(codes[i], fams[i]);
    }

    public static String family(String typeName, Integer jdbc) {
        if (typeName != null && !typeName.isEmpty()) {
            for (int i = 0; i < typeName.length(); i++) {
                char c = typeName.charAt(i);
                if (c < 0x20 || c > 0x7e || c == '/' || c == ':') throw JsonChecks.DECLINE;
            }
            String t = typeName.strip().toLowerCase(java.util.Locale.ROOT);
            if (t.contains("unsigned") && UNSIGNED_INT.matcher(t).find()) return "int";
            for (int i = 0; i < PATTERNS.length; i++) {
                // Python's re.match anchors at the start only; "$" there also matches before a final \n
                if (PATTERNS[i].matcher(t).find()) return NAME_FAMILY[i][1];
            }
        }
        if (jdbc != null && JDBC_FAMILY.containsKey(jdbc)) return JDBC_FAMILY.get(jdbc);
        return "string";
    }

    private static final Pattern GEOMETRY = Pattern.compile("^\\s*(geometry|point|linestring|polygon|multipoint|multilinestring|multipolygon|geometrycollection)\\b", Pattern.CASE_INSENSITIVE);

    public static boolean geometry(String typeName) {
        return typeName != null && GEOMETRY.matcher(typeName).find();
    }
}
