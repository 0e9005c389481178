// The Java side of the Avro parity test: Apicurio's Kafka Connect Avro converter (whose AvroData is a port of
// Confluent's) converts Connect records against a Schema Registry, with Confluent's framing.
//
// Arguments: the registry's base URL (Apicurio's own API, .../apis/registry/v2). Standard input: one JSON line per
// record, {"topic": ..., "envelope": {"schema": ..., "payload": ...}}: Kafka Connect's JsonConverter (schemas.enable)
// reads the envelope as a Connect schema and value, the Avro converter writes them. Standard output: one line per
// record, the written bytes in base64, or "ERROR <exception class>: <message>".

import io.apicurio.registry.utils.converter.AvroConverter;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;

public class AvroParity {
    public static void main(String[] args) throws Exception {
        JsonConverter json = new JsonConverter();
        Map<String, Object> jsonConfig = new HashMap<>();
        jsonConfig.put("schemas.enable", "true");
        json.configure(jsonConfig, false);

        AvroConverter<Object> avro = new AvroConverter<>();
        Map<String, Object> avroConfig = new HashMap<>();
        avroConfig.put("apicurio.registry.url", args[0]);
        avroConfig.put("apicurio.registry.auto-register", "true");
        avroConfig.put("apicurio.registry.as-confluent", "true");
        avroConfig.put("apicurio.registry.headers.enabled", "false");
        avroConfig.put("apicurio.registry.use-id", "contentId");
        avro.configure(avroConfig, false);

        com.fasterxml.jackson.databind.ObjectMapper mapper = new com.fasterxml.jackson.databind.ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            try {
                com.fasterxml.jackson.databind.JsonNode request = mapper.readTree(line);
                String topic = request.get("topic").asText();
                byte[] envelope = mapper.writeValueAsBytes(request.get("envelope"));
                SchemaAndValue connect = json.toConnectData(topic, envelope);
                byte[] written = avro.fromConnectData(topic, connect.schema(), connect.value());
                System.out.println(Base64.getEncoder().encodeToString(written));
            } catch (Exception error) {
                String message = String.valueOf(error.getMessage()).replace('\n', ' ');
                System.out.println("ERROR " + error.getClass().getName() + ": " + message);
            }
            System.out.flush();
        }
    }
}
