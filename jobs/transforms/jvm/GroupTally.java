package cdcreplay.jobs;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.expressions.Aggregator;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A GROUP BY as one aggregate: rows grouped by a struct of key columns, with per group the row count, the sum of
 * one long column, the least and greatest of another and the greatest of a third (each NULL where SQL's SUM, MIN
 * and MAX would give NULL), as the JSON text of a list of groups ({@code cdc_jobs.transforms.accounting} reads it).
 * One aggregate rather than a GROUP BY so that it can be an observed metric of a write ({@code Dataset.observe}):
 * the counts come from the pass that writes the rows, and the rows need not be kept for a second one. Groups are
 * few (sources x tables x ops x kinds), so the buffer stays small whatever the rows.
 */
public final class GroupTally extends Aggregator<Row, GroupTally.Groups, String> {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * Registers the aggregate as {@code name} for keys of this schema (Spark's JSON of a struct type). It takes
     * (keys struct, summed long, ranged long, latest long).
     */
    public static void register(SparkSession spark, String name, String keySchemaJson) {
        StructType input = new StructType().add("keys", DataType.fromJson(keySchemaJson))
                .add("summed", DataTypes.LongType).add("ranged", DataTypes.LongType)
                .add("latest", DataTypes.LongType);
        spark.udf().register(name, functions.udaf(new GroupTally(), Encoders.row(input)));
    }

    /** One group's figures; the sentinels mean nothing until the matching flag is set. */
    static final class Figures implements Serializable {
        long rows;
        long sum;
        boolean anySum;
        long least = Long.MAX_VALUE;
        long greatest = Long.MIN_VALUE;
        boolean anyRanged;
        long latest = Long.MIN_VALUE;
        boolean anyLatest;

        void add(Figures o) {
            rows += o.rows;
            sum += o.sum;
            anySum |= o.anySum;
            if (o.anyRanged) {
                least = Math.min(least, o.least);
                greatest = Math.max(greatest, o.greatest);
                anyRanged = true;
            }
            if (o.anyLatest) {
                latest = Math.max(latest, o.latest);
                anyLatest = true;
            }
        }
    }

    /** The buffer: figures by the key columns' values (NULLs included). */
    public static final class Groups implements Serializable {
        final HashMap<List<Object>, Figures> byKey = new HashMap<>();
        // Rows come in runs of one group (a task reads one source in order): the last group is looked up first.
        transient List<Object> lastKey;
        transient Figures last;
    }

    @Override
    public Groups zero() {
        return new Groups();
    }

    @Override
    public Groups reduce(Groups b, Row r) {
        Row keys = r.getStruct(0);
        Object[] key = new Object[keys.size()];
        for (int i = 0; i < key.length; i++) key[i] = keys.isNullAt(i) ? null : keys.get(i);
        List<Object> k = Arrays.asList(key);
        Figures f = k.equals(b.lastKey) ? b.last : b.byKey.computeIfAbsent(k, x -> new Figures());
        b.lastKey = k;
        b.last = f;
        f.rows++;
        if (!r.isNullAt(1)) {
            f.sum += r.getLong(1);
            f.anySum = true;
        }
        if (!r.isNullAt(2)) {
            long v = r.getLong(2);
            f.least = Math.min(f.least, v);
            f.greatest = Math.max(f.greatest, v);
            f.anyRanged = true;
        }
        if (!r.isNullAt(3)) {
            f.latest = Math.max(f.latest, r.getLong(3));
            f.anyLatest = true;
        }
        return b;
    }

    @Override
    public Groups merge(Groups a, Groups b) {
        for (Map.Entry<List<Object>, Figures> e : b.byKey.entrySet()) {
            a.byKey.computeIfAbsent(e.getKey(), x -> new Figures()).add(e.getValue());
        }
        a.lastKey = null;
        a.last = null;
        return a;
    }

    /** The groups as JSON: [{"keys": [key values in the struct's order], "rows", "sum", "least", "greatest",
     * "latest"}, ...]. */
    @Override
    public String finish(Groups b) {
        List<Map<String, Object>> out = new ArrayList<>(b.byKey.size());
        for (Map.Entry<List<Object>, Figures> e : b.byKey.entrySet()) {
            Figures f = e.getValue();
            Map<String, Object> group = new LinkedHashMap<>();
            group.put("keys", e.getKey());
            group.put("rows", f.rows);
            group.put("sum", f.anySum ? f.sum : null);
            group.put("least", f.anyRanged ? f.least : null);
            group.put("greatest", f.anyRanged ? f.greatest : null);
            group.put("latest", f.anyLatest ? f.latest : null);
            out.add(group);
        }
        try {
            return JSON.writeValueAsString(out);
        } catch (Exception e) {
            throw new IllegalStateException("cannot write the tally as JSON", e);
        }
    }

    @Override
    public Encoder<Groups> bufferEncoder() {
        return Encoders.javaSerialization(Groups.class);
    }

    @Override
    public Encoder<String> outputEncoder() {
        return Encoders.STRING();
    }
}
