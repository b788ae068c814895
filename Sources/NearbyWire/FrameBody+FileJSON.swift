import NearbyBase
/// The file protocol's frame bodies written by hand, the fields in JSONEncoder's order, absent
/// optionals left out as it does: a folder of small files sends several per file each way, and
/// JSONEncoder was a noticeable share of a small file's CPU. Readers decode them without JSONDecoder
/// too (`FlatJSON`, below); `FileFramesJSONTests` checks that JSONDecoder reads the same value.

extension FrameBody.Open: DirectFrameJSON {
    var json: String {
        #"{"kind":"# + EventEncoder.quoted(kind.description) + #","path":"# + EventEncoder.quoted(path) + #","size":"# + String(size)
            + #","key":"# + EventEncoder.quoted(key) + (modified.map { #","modified":"# + String($0) } ?? "") + "}"
    }
}

extension FrameBody.OpenReply: DirectFrameJSON {
    var json: String {
        var line = #"{"accept":"# + (accept ? "true" : "false") + #","offset":"# + String(offset)
        if let prefixSHA256 { line += #","prefixSHA256":"# + EventEncoder.quoted(prefixSHA256) }
        if let reason { line += #","reason":"# + EventEncoder.quoted(reason) }
        if let code { line += #","code":"# + EventEncoder.quoted(code.description) }
        if let held { line += #","held":"# + String(held) }
        if let heldSHA256 { line += #","heldSHA256":"# + EventEncoder.quoted(heldSHA256) }
        if let waiting { line += #","waiting":"# + String(waiting) }
        return line + "}"
    }
}

extension FrameBody.Start: DirectFrameJSON {
    var json: String { #"{"offset":"# + String(offset) + "}" }
}

extension FrameBody.Close: DirectFrameJSON {
    var json: String {
        var line = #"{"sha256":"# + EventEncoder.quoted(sha256) + #","bytes":"# + String(bytes)
        if let alreadyThere { line += #","alreadyThere":"# + (alreadyThere ? "true" : "false") }
        if let savedAs { line += #","savedAs":"# + EventEncoder.quoted(savedAs) }
        return line + "}"
    }
}

// Read back without JSONDecoder (`FlatJSON`; `FlatJSONTests` compares both on generated bodies).

extension FrameBody.Open: FlatJSONDecodable {
    static let flatKeys: [StaticString] = ["kind", "path", "size", "key", "modified"]
    init(flat: FlatJSONFields) throws(FlatJSONFailure) {
        self.init(
            kind: ChannelKind(name: try flat.string(0)), path: try flat.string(1), size: try flat.uint64(2), key: try flat.string(3),
            modified: try flat.optionalUInt64(4))
    }
}

extension FrameBody.OpenReply: FlatJSONDecodable {
    static let flatKeys: [StaticString] = ["accept", "offset", "prefixSHA256", "reason", "code", "held", "heldSHA256", "waiting"]
    init(flat: FlatJSONFields) throws(FlatJSONFailure) {
        self.init(
            accept: try flat.bool(0), offset: try flat.uint64(1), prefixSHA256: try flat.optionalString(2),
            reason: try flat.optionalString(3), code: try flat.optionalString(4).map(TransferCode.init),
            held: try flat.optionalUInt64(5), heldSHA256: try flat.optionalString(6), waiting: try flat.optionalUInt64(7)
        )
    }
}

extension FrameBody.Start: FlatJSONDecodable {
    static let flatKeys: [StaticString] = ["offset"]
    init(flat: FlatJSONFields) throws(FlatJSONFailure) {
        self.init(offset: try flat.uint64(0))
    }
}

extension FrameBody.Close: FlatJSONDecodable {
    static let flatKeys: [StaticString] = ["sha256", "bytes", "alreadyThere", "savedAs"]
    init(flat: FlatJSONFields) throws(FlatJSONFailure) {
        self.init(sha256: try flat.string(0), bytes: try flat.uint64(1), alreadyThere: try flat.optionalBool(2), savedAs: try flat.optionalString(3))
    }
}

extension FrameBody.Reset: FlatJSONDecodable {
    static let flatKeys: [StaticString] = ["reason", "code"]
    init(flat: FlatJSONFields) throws(FlatJSONFailure) {
        self.init(reason: try flat.string(0), code: TransferCode(try flat.string(1)))
    }
}
