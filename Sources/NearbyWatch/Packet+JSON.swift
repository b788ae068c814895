import NearbyBase

/// `packet` lines written by hand, exactly as JSONEncoder writes them (sorted keys, nil optionals
/// left out, `interface` null): at 10,000 packets a second JSONEncoder took a third of watch's
/// thread (perf, bench/watch.sh). `PacketJSONTests` holds the two equal.
extension Events.Packet: DirectJSON {
    package func writeFields(into line: inout String) {
        line += #","additional":"#
        Self.write(additional, into: &line)
        line += #","answers":"#
        Self.write(answers, into: &line)
        line += #","authority":"#
        Self.write(authority, into: &line)
        line += #","captured":"# + EventEncoder.quoted(captured)
        line += #","destination":"# + EventEncoder.quoted(destination)
        line += #","destination_port":"# + String(destinationPort)
        line += #","id":"# + String(id)
        line += #","interface":"# + (interface.map(EventEncoder.quoted) ?? "null")
        line += #","kind":"# + EventEncoder.quoted(kind)
        line += #","meaning":["#
        for (index, meaning) in meaning.enumerated() {
            if index > 0 { line += "," }
            line += "{"
            if let addresses = meaning.addresses {
                line += #""addresses":["# + addresses.map(EventEncoder.quoted).joined(separator: ",") + "],"
            }
            if let host = meaning.host { line += #""host":"# + EventEncoder.quoted(host) + "," }
            line += #""kind":"# + EventEncoder.quoted(meaning.kind) + #","name":"# + EventEncoder.quoted(meaning.name)
            if let port = meaning.port { line += #","port":"# + String(port) }
            if let service = meaning.service { line += #","service":"# + EventEncoder.quoted(service) }
            line += "}"
        }
        line += #"],"questions":["#
        for (index, question) in questions.enumerated() {
            if index > 0 { line += "," }
            line += #"{"class":"# + EventEncoder.quoted(question.class) + #","name":"# + EventEncoder.quoted(question.name)
            line += #","type":"# + EventEncoder.quoted(question.type)
            line += #","unicast_response":"# + (question.unicastResponse ? "true" : "false") + "}"
        }
        line += #"],"size":"# + String(size)
        line += #","source":"# + EventEncoder.quoted(source)
        line += #","source_port":"# + String(sourcePort)
        line += #","truncated":"# + (truncated ? "true" : "false")
    }

    private static func write(_ records: [Events.WatchRecord], into line: inout String) {
        line += "["
        for (index, record) in records.enumerated() {
            if index > 0 { line += "," }
            line += #"{"cache_flush":"# + (record.cacheFlush ? "true" : "false") + #","class":"# + EventEncoder.quoted(record.class)
            line += #","data":"# + EventEncoder.quoted(record.data) + #","name":"# + EventEncoder.quoted(record.name)
            line += #","ttl":"# + String(record.ttl) + #","type":"# + EventEncoder.quoted(record.type) + "}"
        }
        line += "]"
    }
}
