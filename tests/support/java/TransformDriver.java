/*
 * Runs records through Kafka Connect's own Single Message Transforms and predicates, for Headwater's parity tests.
 *
 * Reads JSON requests from stdin (one or more documents, whitespace separated; tests/support/java_transforms.py
 * sends one per line) and answers each with one line of JSON on stdout:
 *
 *   request:  {"transforms": {"transforms": "a,b", "transforms.a.type": "...", ..., "predicates": "p",
 *                             "predicates.p.type": "...", ...},
 *              "records": [{"kind": "sink"|"source", "topic", "partition", "offset", "key", "value", "timestamp",
 *                           "headers": [[name, value], ...], "key_schema"?, "value_schema"?}, ...],
 *              "header_schemas"?: false, "converter"?: {"replace.null.with.default": "false", ...}}
 *   response: {"records": [<record> | null | {"error": "<exception class>: <message>"}, ...]}
 *             {"config_error": "<exception class>: <message>"}   the chain could not be built
 *             {"request_error": "<exception class>: <message>"}  the request itself is malformed
 *
 * The config is first checked as the worker checks a connector config: no alias listed twice in "transforms" or
 * "predicates", each "<kind>.<alias>.type" a concrete Transformation or Predicate (Kafka's own messages, "Did you
 * mean ...$Key, ...$Value?" included), each listed predicate's settings valid for its ConfigDef, "negate" only with
 * "predicate" and a boolean. A config that fails gets "config_error" with the exception Kafka raises.
 *
 * The chain is built as Kafka Connect's ConnectorConfig.transformationStages builds it: the aliases of
 * "transforms" in order; each transformation a new instance of "transforms.<alias>.type" configured with every key
 * under "transforms.<alias>." (prefix stripped, "type" included) less "predicate" and "negate"; a predicate, when
 * "transforms.<alias>.predicate" names one, a new instance of "predicates.<name>.type" configured with every key
 * under "predicates.<name>.". A stage applies its transformation when it has no predicate or when
 * negate XOR predicate.test(record) (TransformationStage.apply); the chain stops at the first null
 * (TransformationChain.apply). A record a stage throws on gets {"error": ...}, the others go on.
 *
 * Values without a schema: JSON objects become LinkedHashMap, arrays ArrayList, integers Long, other numbers
 * Double, strings String, booleans Boolean; three one-key objects are markers: {"$bytes": "<base64>"} is a byte[],
 * {"$timestamp": <epoch ms>} a java.util.Date, {"$decimal": "<digits>"} a BigDecimal. Back to JSON, Byte, Short,
 * Integer and Long are integers, Float (widened exactly) and Double numbers, byte[] and ByteBuffer "$bytes",
 * Date "$timestamp", BigDecimal "$decimal". NaN and infinities are the bare tokens NaN, Infinity, -Infinity.
 *
 * Values with a schema ("key_schema"/"value_schema" given, or set by a transform on the way): the schema is Kafka
 * Connect's JsonConverter schema JSON and the value its payload, exactly what JsonConverter with
 * schemas.enable=true writes as {"schema": ..., "payload": ...}; the output carries "key_schema"/"value_schema"
 * whenever the record has one. "converter" holds settings of that JsonConverter for this request (both ways), such
 * as "replace.null.with.default": "false", which keeps a null where the schema has a default, as Headwater's payloads
 * do. A record whose output the converter refuses (a value its schema's logical type cannot hold, a Decimal of
 * another scale) gets {"error": ...}, as a worker fails a record its converter refuses.
 *
 * Headers: [name, value] is a header without a schema, [name, payload, schema] one with (JsonConverter's schema and
 * payload). Output headers are [name, value], or with "header_schemas": true [name, payload, schema] for each
 * header whose schema is not null.
 */

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Modifier;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Date;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

public final class TransformDriver {
    private static final String TRANSFORMS = "transforms";
    private static final String PREDICATES = "predicates";
    private static final String PREDICATE = "predicate";
    private static final String NEGATE = "negate";
    private static final Set<String> RECORD_FIELDS = Set.of("kind", "topic", "partition", "offset", "key", "value",
            "timestamp", "headers", "key_schema", "value_schema");

    private static final JsonMapper MAPPER = JsonMapper.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .disable(JsonWriteFeature.WRITE_NAN_AS_STRINGS)
            .build();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private TransformDriver() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err); // whatever a transform prints goes to stderr, never between two responses
        JsonParser parser = MAPPER.createParser(System.in);
        try (MappingIterator<JsonNode> requests = MAPPER.readValues(parser, JsonNode.class)) {
            while (true) {
                JsonNode request;
                try {
                    if (!requests.hasNextValue()) {
                        break;
                    }
                    request = requests.nextValue();
                } catch (Exception e) {
                    out.println(MAPPER.writeValueAsString(failure("request_error", e)));
                    out.flush();
                    return; // the stream cannot be resynchronised after a syntax error
                }
                ObjectNode response;
                try {
                    response = handle(request);
                } catch (Exception e) {
                    response = failure("request_error", e);
                }
                out.println(MAPPER.writeValueAsString(response));
                out.flush();
            }
        }
    }

    static ObjectNode handle(JsonNode request) throws Exception {
        if (!request.isObject()) {
            throw new IllegalArgumentException("a request is a JSON object, got " + request.getNodeType());
        }
        Map<String, String> props = stringMap(request.path("transforms"));
        boolean headerSchemas = request.path("header_schemas").asBoolean(false);
        Map<String, String> converterSettings = stringMap(request.path("converter"));
        keyConverter = converter(true, converterSettings);
        valueConverter = converter(false, converterSettings);
        JsonNode records = request.path("records");
        if (!records.isArray()) {
            throw new IllegalArgumentException("\"records\" must be an array");
        }
        List<ConnectRecord<?>> inputs = new ArrayList<>();
        for (JsonNode record : records) {
            inputs.add(toRecord(record));
        }
        List<Stage> chain;
        try {
            chain = buildChain(props);
        } catch (Exception e) {
            return failure("config_error", e);
        }
        ArrayNode outputs = NODES.arrayNode();
        try {
            for (ConnectRecord<?> input : inputs) {
                ConnectRecord<?> output;
                try {
                    output = apply(chain, input);
                } catch (Exception e) {
                    outputs.add(failure("error", e));
                    continue;
                }
                if (output == null) {
                    outputs.add(NODES.nullNode());
                    continue;
                }
                try {
                    outputs.add(fromRecord(output, headerSchemas));
                } catch (DataException e) {
                    outputs.add(failure("error", e));
                }
            }
        } finally {
            for (Stage stage : chain) {
                stage.close();
            }
        }
        ObjectNode response = NODES.objectNode();
        response.set("records", outputs);
        return response;
    }

    /** One transformation with its optional predicate (Kafka's TransformationStage). */
    @SuppressWarnings({"rawtypes", "unchecked"})
    static final class Stage {
        final Transformation transformation;
        final Predicate predicate;
        final boolean negate;

        Stage(Transformation transformation, Predicate predicate, boolean negate) {
            this.transformation = transformation;
            this.predicate = predicate;
            this.negate = negate;
        }

        ConnectRecord apply(ConnectRecord record) {
            if (predicate == null || negate ^ predicate.test(record)) {
                return transformation.apply(record);
            }
            return record;
        }

        void close() {
            transformation.close();
            if (predicate != null) {
                predicate.close();
            }
        }
    }

    static ConnectRecord<?> apply(List<Stage> chain, ConnectRecord<?> record) {
        for (Stage stage : chain) {
            record = stage.apply(record);
            if (record == null) {
                break;
            }
        }
        return record;
    }

    @SuppressWarnings({"rawtypes", "unchecked"})
    static List<Stage> buildChain(Map<String, String> props) {
        // first what the worker validates (ConnectorConfig's enriched ConfigDef), then the chain itself
        List<String> aliases = aliases(props, TRANSFORMS);
        for (String alias : aliases(props, PREDICATES)) {
            String prefix = PREDICATES + "." + alias + ".";
            Predicate predicate = Utils.newInstance(pluginClass(props, prefix, Predicate.class), Predicate.class);
            try {
                predicate.config().parse(withPrefix(props, prefix));
            } finally {
                predicate.close();
            }
        }
        List<Stage> chain = new ArrayList<>();
        try {
            for (String alias : aliases) {
                String prefix = TRANSFORMS + "." + alias + ".";
                if (props.containsKey(prefix + NEGATE) && !props.containsKey(prefix + PREDICATE)) {
                    throw new ConfigException("Config '" + prefix + NEGATE + "' was provided but there is no config '"
                            + prefix + PREDICATE + "' defining a predicate to be negated.");
                }
                Class<?> transformClass = pluginClass(props, prefix, Transformation.class);
                Transformation transformation = Utils.newInstance(transformClass, Transformation.class);
                Map<String, Object> configs = withPrefix(props, prefix);
                Object predicateAlias = configs.remove(PREDICATE);
                Object negate = configs.remove(NEGATE);
                if (negate != null) { // the worker validates it as a BOOLEAN before building the chain
                    ConfigDef.parseType(prefix + NEGATE, negate, ConfigDef.Type.BOOLEAN);
                }
                transformation.configure(configs);
                if (predicateAlias == null) {
                    chain.add(new Stage(transformation, null, false));
                    continue;
                }
                String predicatePrefix = PREDICATES + "." + predicateAlias + ".";
                Class<?> predicateClass = pluginClass(props, predicatePrefix, Predicate.class);
                Predicate predicate = Utils.newInstance(predicateClass, Predicate.class);
                predicate.configure(withPrefix(props, predicatePrefix));
                chain.add(new Stage(transformation, predicate, negate != null && Boolean.parseBoolean(negate.toString())));
            }
        } catch (RuntimeException e) {
            for (Stage stage : chain) {
                stage.close();
            }
            throw e;
        }
        return chain;
    }

    /** The aliases listed under key, refused when one is listed twice (ConnectorConfig's alias validator). */
    static List<String> aliases(Map<String, String> props, String key) {
        List<?> parsed = (List<?>) ConfigDef.parseType(key, props.getOrDefault(key, ""), ConfigDef.Type.LIST);
        if (new HashSet<>(parsed).size() != parsed.size()) {
            throw new ConfigException(key, parsed, "Duplicate alias provided.");
        }
        List<String> aliases = new ArrayList<>();
        for (Object alias : parsed) {
            aliases.add((String) alias);
        }
        return aliases;
    }

    /** The class of prefix + "type", checked as ConnectorConfig.EnrichablePlugin checks it. */
    static Class<?> pluginClass(Map<String, String> props, String prefix, Class<?> base) {
        String key = prefix + "type";
        String name = props.get(key);
        if (name == null) {
            throw new ConfigException("Missing required configuration \"" + key + "\" which has no default value.");
        }
        Class<?> cls = (Class<?>) ConfigDef.parseType(key, name, ConfigDef.Type.CLASS);
        if (!base.isAssignableFrom(cls)) {
            throw new ConfigException(key, String.valueOf(cls), "Not a " + base.getSimpleName());
        }
        if (Modifier.isAbstract(cls.getModifiers())) {
            String children = Stream.of(cls.getClasses())
                    .filter(cls::isAssignableFrom)
                    .filter(c -> !Modifier.isAbstract(c.getModifiers()))
                    .filter(c -> Modifier.isPublic(c.getModifiers()))
                    .map(Class::getName)
                    .collect(Collectors.joining(", "));
            String kind = base.getSimpleName();
            throw new ConfigException(key, String.valueOf(cls), children.isEmpty()
                    ? kind + " is abstract and cannot be created."
                    : kind + " is abstract and cannot be created. Did you mean " + children + "?");
        }
        return cls;
    }

    /** Kafka's AbstractConfig.originalsWithPrefix: every key under prefix, the prefix stripped. */
    static Map<String, Object> withPrefix(Map<String, String> props, String prefix) {
        Map<String, Object> found = new HashMap<>();
        for (Map.Entry<String, String> entry : props.entrySet()) {
            if (entry.getKey().startsWith(prefix) && entry.getKey().length() > prefix.length()) {
                found.put(entry.getKey().substring(prefix.length()), entry.getValue());
            }
        }
        return found;
    }

    static Map<String, String> stringMap(JsonNode node) {
        if (node.isMissingNode() || node.isNull()) {
            return new HashMap<>();
        }
        if (!node.isObject()) {
            throw new IllegalArgumentException("\"transforms\" must be an object of string values");
        }
        Map<String, String> props = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> entry : node.properties()) {
            if (!entry.getValue().isTextual()) {
                throw new IllegalArgumentException("config value of \"" + entry.getKey() + "\" is not a string");
            }
            props.put(entry.getKey(), entry.getValue().textValue());
        }
        return props;
    }

    // records

    static ConnectRecord<?> toRecord(JsonNode node) throws Exception {
        if (!node.isObject()) {
            throw new IllegalArgumentException("a record is a JSON object, got " + node.getNodeType());
        }
        for (Map.Entry<String, JsonNode> field : node.properties()) {
            if (!RECORD_FIELDS.contains(field.getKey())) {
                throw new IllegalArgumentException("unknown record field \"" + field.getKey() + "\"");
            }
        }
        String kind = node.path("kind").asText("sink");
        String topic = node.path("topic").isTextual() ? node.get("topic").textValue() : null;
        if (topic == null) {
            throw new IllegalArgumentException("a record needs a \"topic\" string");
        }
        Long partitionNumber = integer(node, "partition");
        Integer partition = partitionNumber == null ? null : Math.toIntExact(partitionNumber);
        Long timestamp = integer(node, "timestamp");
        Long offsetNumber = integer(node, "offset");
        SchemaAndValue key = toConnect(topic, node.path("key_schema"), node.path("key"), true);
        SchemaAndValue value = toConnect(topic, node.path("value_schema"), node.path("value"), false);
        ConnectHeaders headers = new ConnectHeaders();
        for (JsonNode header : node.path("headers")) {
            if (!header.isArray() || header.size() < 2 || header.size() > 3 || !header.get(0).isTextual()) {
                throw new IllegalArgumentException("a header is [name, value] or [name, payload, schema], got " + header);
            }
            JsonNode schema = header.size() == 3 ? header.get(2) : NODES.nullNode();
            headers.add(header.get(0).textValue(), toConnect(topic, schema, header.get(1), false));
        }
        switch (kind) {
            case "sink":
                if (partition == null) {
                    partition = 0;
                }
                long offset = offsetNumber == null ? 0 : offsetNumber;
                TimestampType type = timestamp == null ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME;
                return new SinkRecord(topic, partition, key.schema(), key.value(), value.schema(), value.value(),
                        offset, timestamp, type, headers);
            case "source":
                return new SourceRecord(null, null, topic, partition, key.schema(), key.value(), value.schema(),
                        value.value(), timestamp, headers);
            default:
                throw new IllegalArgumentException("\"kind\" is \"sink\" or \"source\", got \"" + kind + "\"");
        }
    }

    /** The integer at field, null when absent or null; anything else is refused. */
    static Long integer(JsonNode node, String field) {
        JsonNode value = node.path(field);
        if (value.isMissingNode() || value.isNull()) {
            return null;
        }
        if (!value.isIntegralNumber() || !value.canConvertToLong()) {
            throw new IllegalArgumentException("record field \"" + field + "\" is not an integer: " + value);
        }
        return value.longValue();
    }

    static ObjectNode fromRecord(ConnectRecord<?> record, boolean headerSchemas) throws Exception {
        ObjectNode node = NODES.objectNode();
        boolean sink = record instanceof SinkRecord;
        node.put("kind", sink ? "sink" : "source");
        node.put("topic", record.topic());
        if (record.kafkaPartition() == null) {
            node.putNull("partition");
        } else {
            node.put("partition", record.kafkaPartition());
        }
        if (sink) {
            node.put("offset", ((SinkRecord) record).kafkaOffset());
        }
        putValue(node, "key", record.topic(), record.keySchema(), record.key(), true);
        putValue(node, "value", record.topic(), record.valueSchema(), record.value(), false);
        if (record.timestamp() == null) {
            node.putNull("timestamp");
        } else {
            node.put("timestamp", record.timestamp());
        }
        ArrayNode headers = node.putArray("headers");
        for (Header header : record.headers()) {
            ArrayNode pair = headers.addArray();
            pair.add(header.key());
            if (headerSchemas && header.schema() != null) {
                JsonNode envelope = envelope(header.key(), header.schema(), header.value(), false);
                pair.add(envelope.get("payload"));
                pair.add(envelope.get("schema"));
            } else {
                pair.add(toJson(header.value()));
            }
        }
        return node;
    }

    static void putValue(ObjectNode node, String field, String topic, Schema schema, Object value, boolean isKey)
            throws Exception {
        if (schema == null) {
            node.set(field, toJson(value));
            return;
        }
        JsonNode envelope = envelope(topic, schema, value, isKey);
        node.set(field, envelope.get("payload"));
        node.set(field + "_schema", envelope.get("schema"));
    }

    // schemas: Kafka Connect's JsonConverter, schemas.enable=true

    static JsonConverter converter(boolean isKey, Map<String, String> settings) {
        Map<String, String> config = new HashMap<>(settings);
        config.put("schemas.enable", "true");
        JsonConverter converter = new JsonConverter();
        converter.configure(config, isKey);
        return converter;
    }

    private static JsonConverter keyConverter = converter(true, Map.of());
    private static JsonConverter valueConverter = converter(false, Map.of());

    static SchemaAndValue toConnect(String topic, JsonNode schema, JsonNode payload, boolean isKey) throws Exception {
        if (schema.isMissingNode() || schema.isNull()) {
            return new SchemaAndValue(null, fromJson(payload));
        }
        ObjectNode envelope = NODES.objectNode();
        envelope.set("schema", schema);
        envelope.set("payload", payload.isMissingNode() ? NODES.nullNode() : payload);
        JsonConverter converter = isKey ? keyConverter : valueConverter;
        return converter.toConnectData(topic, MAPPER.writeValueAsBytes(envelope));
    }

    static JsonNode envelope(String topic, Schema schema, Object value, boolean isKey) throws Exception {
        JsonConverter converter = isKey ? keyConverter : valueConverter;
        return MAPPER.readTree(converter.fromConnectData(topic, schema, value));
    }

    // schemaless values

    static Object fromJson(JsonNode node) {
        if (node == null || node.isMissingNode() || node.isNull()) {
            return null;
        }
        if (node.isObject()) {
            if (node.size() == 1) {
                JsonNode bytes = node.get("$bytes");
                if (bytes != null && bytes.isTextual()) {
                    return Base64.getDecoder().decode(bytes.textValue());
                }
                JsonNode millis = node.get("$timestamp");
                if (millis != null && millis.isIntegralNumber()) {
                    return new Date(millis.longValue());
                }
                JsonNode decimal = node.get("$decimal");
                if (decimal != null && decimal.isTextual()) {
                    return new BigDecimal(decimal.textValue());
                }
            }
            Map<String, Object> map = new LinkedHashMap<>();
            for (Map.Entry<String, JsonNode> entry : node.properties()) {
                map.put(entry.getKey(), fromJson(entry.getValue()));
            }
            return map;
        }
        if (node.isArray()) {
            List<Object> list = new ArrayList<>();
            for (JsonNode item : node) {
                list.add(fromJson(item));
            }
            return list;
        }
        if (node.isIntegralNumber()) {
            if (!node.canConvertToLong()) {
                throw new IllegalArgumentException("integer out of the 64-bit range: " + node);
            }
            return node.longValue();
        }
        if (node.isNumber()) {
            return node.doubleValue();
        }
        if (node.isTextual()) {
            return node.textValue();
        }
        if (node.isBoolean()) {
            return node.booleanValue();
        }
        throw new IllegalArgumentException("no Connect value for JSON " + node.getNodeType());
    }

    static JsonNode toJson(Object value) {
        if (value == null) {
            return NODES.nullNode();
        }
        if (value instanceof Map) {
            ObjectNode object = NODES.objectNode();
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                if (!(entry.getKey() instanceof String)) {
                    throw new IllegalArgumentException("a map key is not a string: " + describeType(entry.getKey()));
                }
                object.set((String) entry.getKey(), toJson(entry.getValue()));
            }
            return object;
        }
        if (value instanceof Collection) {
            ArrayNode array = NODES.arrayNode();
            for (Object item : (Collection<?>) value) {
                array.add(toJson(item));
            }
            return array;
        }
        if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte) {
            return NODES.numberNode(((Number) value).longValue());
        }
        if (value instanceof Float || value instanceof Double) {
            return NODES.numberNode(((Number) value).doubleValue());
        }
        if (value instanceof String) {
            return NODES.textNode((String) value);
        }
        if (value instanceof Boolean) {
            return NODES.booleanNode((Boolean) value);
        }
        if (value instanceof byte[]) {
            return marker("$bytes", NODES.textNode(Base64.getEncoder().encodeToString((byte[]) value)));
        }
        if (value instanceof ByteBuffer) {
            ByteBuffer buffer = ((ByteBuffer) value).duplicate();
            byte[] bytes = new byte[buffer.remaining()];
            buffer.get(bytes);
            return marker("$bytes", NODES.textNode(Base64.getEncoder().encodeToString(bytes)));
        }
        if (value instanceof Date) {
            return marker("$timestamp", NODES.numberNode(((Date) value).getTime()));
        }
        if (value instanceof BigDecimal) {
            return marker("$decimal", NODES.textNode(((BigDecimal) value).toPlainString()));
        }
        throw new IllegalArgumentException("no JSON for a schemaless " + describeType(value));
    }

    static ObjectNode marker(String name, JsonNode value) {
        ObjectNode node = NODES.objectNode();
        node.set(name, value);
        return node;
    }

    static String describeType(Object value) {
        return value == null ? "null" : value.getClass().getName();
    }

    static ObjectNode failure(String field, Throwable error) {
        ObjectNode node = NODES.objectNode();
        node.put(field, error.getClass().getName() + ": " + error.getMessage());
        return node;
    }
}
