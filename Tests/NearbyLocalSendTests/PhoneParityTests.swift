import Crypto
import Foundation
import NIOCore
import NearbyCore
import NearbyHTTP
import Testing
import X509
@testable import NearbyLocalSend
@testable import NearbyBase
@testable import NearbyIdentity
@testable import NearbyTransfer

/// Where nearby used to differ from the official app as a phone sees it (issue 50): file dates,
/// media types, certificate dates, a known alias with a new fingerprint, long texts. Fixtures in
/// the official app's own formats (localsend/localsend 1.18.2: `packages/core/src/model/transfer.rs`
/// tests, `packages/core/src/crypto/cert.rs`).
@Suite struct PhoneParityTests {
    init() { LocalSendTestDeadlines.relax() }

    private func temporary() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-lsp-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    // MARK: dates

    /// The official core's own test vectors (transfer.rs `parses_utc_timestamp`, `parses_fractional_seconds`,
    /// `parses_offset_timestamp`, `ignores_invalid_timestamp`).
    @Test func datesReadAsTheOfficialCoreReadsThem() {
        typealias Instant = LocalSendFileDates.Instant
        #expect(LocalSendFileDates.parse("2000-01-01T00:00:00Z") == Instant(seconds: 946_684_800, nanoseconds: 0))
        #expect(LocalSendFileDates.parse("1970-01-01T00:00:00.500Z") == Instant(seconds: 0, nanoseconds: 500_000_000))
        #expect(LocalSendFileDates.parse("2000-01-01T01:00:00+01:00") == Instant(seconds: 946_684_800, nanoseconds: 0))
        #expect(LocalSendFileDates.parse("1970-01-01T00:00:00.123456789Z") == Instant(seconds: 0, nanoseconds: 123_456_789))
        #expect(LocalSendFileDates.parse("1969-12-31T23:59:59Z") == Instant(seconds: -1, nanoseconds: 0))
        #expect(LocalSendFileDates.parse("2024-02-29T12:00:00-05:30")?.seconds == 1_709_227_800)
        for bad in ["yesterday", "2000-01-01T00:00:00", "2000-13-01T00:00:00Z", "2001-02-29T00:00:00Z", "2000-01-01T00:00:00.Z",
                    "2000-01-01T24:00:00Z", "2000-01-01T00:00:00Zjunk", String(repeating: "9", count: 100)] {
            #expect(LocalSendFileDates.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func datesAreWrittenInUTCWithMicrosecondsAndReadBack() {
        let time = LocalSendFileDates.Instant(seconds: 1_600_000_000, nanoseconds: 123_456_789)
        let text = LocalSendFileDates.format(time)
        #expect(text == "2020-09-13T12:26:40.123456Z")
        #expect(LocalSendFileDates.parse(text ?? "") == LocalSendFileDates.Instant(seconds: 1_600_000_000, nanoseconds: 123_456_000))
        #expect(LocalSendFileDates.format(.init(seconds: -86400, nanoseconds: 0)) == "1969-12-31T00:00:00.000000Z")
    }

    @Test func theOfferCarriesTheFilesOwnDatesAsMetadata() async throws {
        let path = temporary() + "/photo.jpg"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("jpeg".utf8)))
        let times = [timespec(tv_sec: 1_600_000_001, tv_nsec: 987_654_300), timespec(tv_sec: 1_600_000_000, tv_nsec: 123_456_700)]
        #expect(times.withUnsafeBufferPointer { utimensat(AT_FDCWD, path, $0.baseAddress, 0) } == 0)
        let file = OutgoingFile(source: path, relative: "photo.jpg", size: 4, modified: 1_600_000_000)
        let (sha, dates) = try await LocalSendSender.sha256(of: file)
        #expect(dates == LocalSendFileDates(modified: "2020-09-13T12:26:40.123456Z", accessed: "2020-09-13T12:26:41.987654Z"))
        let body = LocalSendSender.prepareBody(
            info: DeviceMessage(alias: "me", fingerprint: "f"), files: [LocalSendSender.fileOffer(.init(id: "f1", file: file, sha256: sha, dates: dates), alone: true)])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let entry = try #require((object["files"] as? [String: [String: Any]])?["f1"])
        let metadata = try #require(entry["metadata"] as? [String: String])
        #expect(metadata == ["modified": "2020-09-13T12:26:40.123456Z", "accessed": "2020-09-13T12:26:41.987654Z"])
        #expect(entry["fileType"] as? String == "image/jpeg")
        #expect(entry["preview"] == nil)
    }

    private func receiver(_ policy: LocalSendPolicy, home: String) -> (LocalSendReceiver, MemorySink) {
        let sink = MemorySink()
        let me = DeviceMessage(alias: "me", fingerprint: "m")
        return (LocalSendReceiver(me: me, policy: policy, events: sink, known: LocalSendKnownDevices(paths: NearbyPaths(home: home))), sink)
    }

    private let prepare = LocalSendRequest(method: .POST, path: "/api/localsend/v2/prepare-upload")

    private struct Tokens: Decodable {
        var sessionId: String
        var files: [String: String]
    }

    /// prepare-upload of one file with `metadata` as given (raw JSON), then its upload: the status.
    private func receive(_ content: String, metadata: String?, into directory: String) async throws -> Int {
        var policy = LocalSendPolicy(saveDirectory: directory, pin: nil)
        policy.autoAccept = true
        let (receiver, _) = receiver(policy, home: temporary())
        let sha = Hex.encode(SHA256.hash(data: Array(content.utf8)))
        let meta = metadata.map { #","metadata":\#($0)"# } ?? ""
        let json = #"{"info":{"alias":"Pixel 8","fingerprint":"\#(String(repeating: "a", count: 64))","version":"2.1"},"files":{"f1":{"id":"f1","fileName":"IMG_1.jpg","size":\#(content.utf8.count),"fileType":"image/jpeg","sha256":"\#(sha)"\#(meta)}}}"#
        let answer = await receiver.handle(prepare, body: ReceiverTests.body([Array(json.utf8)]))
        guard answer.status == 200 else { return answer.status }
        let tokens = try JSONDecoder().decode(Tokens.self, from: Data(answer.body))
        let upload = LocalSendRequest(
            method: .POST, path: "/api/localsend/v2/upload",
            query: ["sessionId": tokens.sessionId, "fileId": "f1", "token": tokens.files["f1"] ?? ""], contentLength: content.utf8.count)
        return await receiver.handle(upload, body: ReceiverTests.body([Array(content.utf8)])).status
    }

    private func times(_ path: String) -> (modified: Int, accessed: Int, nanoseconds: Int) {
        var status = stat()
        _ = stat(path, &status)
        return (Int(status.st_mtim.tv_sec), Int(status.st_atim.tv_sec), Int(status.st_mtim.tv_nsec))
    }

    @Test func aReceivedFileKeepsTheSendersDates() async throws {
        let directory = temporary()
        // As the official app's Dart side writes them (UTC, fractional seconds), and its core (nanoseconds).
        let status = try await receive("abc", metadata: #"{"modified":"2001-02-03T04:05:06.500Z","accessed":"2002-01-01T00:00:00.123456789Z"}"#, into: directory)
        #expect(status == 200)
        let placed = times(directory + "/IMG_1.jpg")
        #expect(placed.modified == 981_173_106 && placed.nanoseconds == 500_000_000)
        #expect(placed.accessed == 1_009_843_200)
    }

    @Test func aDateThatDoesNotReadIsIgnoredNeverAnError() async throws {
        let now = Int(Date().timeIntervalSince1970)
        for metadata in [#"{"modified":"yesterday"}"#, #"{"modified":42,"accessed":[1]}"#, #""not an object""#, "null", #"{"modified":"2000-01-01T00:00:00"}"#] {
            let directory = temporary()
            #expect(try await receive("abc", metadata: metadata, into: directory) == 200, "\(metadata)")
            #expect(times(directory + "/IMG_1.jpg").modified >= now - 5, "\(metadata)")
        }
        // Only the date that reads is applied.
        let directory = temporary()
        #expect(try await receive("abc", metadata: #"{"modified":"2001-02-03T04:05:06Z","accessed":"never"}"#, into: directory) == 200)
        #expect(times(directory + "/IMG_1.jpg").modified == 981_173_106)
    }

    // MARK: media types

    @Test func mediaTypesComeFromTheSystemsDatabase() {
        let table = LocalSendMediaTypes(text: "# comment\nvideo/x-matroska\t\tmkv mk3d\nimage/x-example  XMP jpg\ntext/plain txt\n  \nbroken\n")
        #expect(table.type(of: "film.MKV") == "video/x-matroska")
        #expect(table.type(of: "trip/a.xmp") == "image/x-example")
        // The file's line wins over the built-in table; unknown types are generic.
        #expect(table.type(of: "a.jpg") == "image/x-example")
        #expect(table.type(of: "notes.txt") == "text/plain")
        #expect(table.type(of: "noext") == "application/octet-stream")
        #expect(table.type(of: ".hidden") == "application/octet-stream")
        // Without a database: the built-in table.
        let fallback = LocalSendMediaTypes(text: nil)
        for (name, type) in [("a.heic", "image/heic"), ("a.webm", "video/webm"), ("a.mkv", "video/x-matroska"), ("a.pdf", "application/pdf"),
                             ("a.txt", "text/plain"), ("a.md", "text/markdown"), ("a.csv", "text/csv"), ("a.html", "text/html")] {
            #expect(fallback.type(of: name) == type)
        }
    }

    /// The types a phone's gallery needs (image/*, video/*), from this machine's /etc/mime.types
    /// (Debian's media-types) or the built-in table.
    @Test func photosAndVideosAreImageAndVideoTypes() {
        for ext in ["jpg", "jpeg", "png", "gif", "webp", "bmp", "tif", "tiff", "heic", "heif", "avif"] {
            #expect(LocalSendSender.mediaType("a.\(ext)").hasPrefix("image/"), "\(ext): \(LocalSendSender.mediaType("a.\(ext)"))")
        }
        for ext in ["mp4", "m4v", "mov", "mkv", "webm", "avi", "3gp", "mpeg"] {
            #expect(LocalSendSender.mediaType("a.\(ext)").hasPrefix("video/"), "\(ext): \(LocalSendSender.mediaType("a.\(ext)"))")
        }
        #expect(LocalSendSender.mediaType("a.mp3") == "audio/mpeg")
        #expect(LocalSendSender.mediaType("a.flac").hasPrefix("audio/"))
        // Text files as the app sends them (the Dart mime table; /etc/mime.types agrees).
        for (ext, type) in [("txt", "text/plain"), ("csv", "text/csv"), ("html", "text/html"), ("htm", "text/html")] {
            #expect(LocalSendSender.mediaType("notes.\(ext)") == type)
        }
    }

    /// A text file is `text/*` in a batch; alone it is a generic file, so that no receiver takes
    /// it for a message (localsend-cli prints a lone `text/*` file; the app wants a preview too).
    @Test func aLoneTextFileIsOfferedAsAFile() {
        let file = OutgoingFile(source: "/tmp/notes.txt", relative: "notes.txt", size: 3, modified: 0)
        let offer = LocalSendSender.Offer(id: "f1", file: file, sha256: String(repeating: "0", count: 64), dates: nil)
        #expect(LocalSendSender.fileOffer(offer, alone: false).fileType == "text/plain")
        #expect(LocalSendSender.fileOffer(offer, alone: true).fileType == "application/octet-stream")
        #expect(LocalSendSender.fileOffer(offer, alone: true).preview == nil)
    }

    // MARK: one file fails

    @Test func aBatchCountsWhatArrivedWithTheFirstFailuresExitStatus() {
        let target = LocalSendTarget(host: "10.0.0.2", port: 53317)
        #expect(LocalSendSender.outcome(offered: 3, refused: [], failed: [], untried: [], target: target) == nil)
        let refused = LocalSendSender.refusal(.init(status: 403, body: Array(#"{"message":"not this one"}"#.utf8), fingerprint: nil), target: target, pin: nil)
        let one = LocalSendSender.outcome(offered: 3, refused: [], failed: [("b.jpg", refused)], untried: [], target: target)
        #expect(one?.exitStatus == .declined)
        #expect(one?.errorDescription?.contains("2 of 3 files arrived; not b.jpg") == true, "\(one?.errorDescription ?? "")")
        #expect(one?.errorDescription?.contains("not this one") == true)
        let damaged = LocalSendSender.refusal(.init(status: 422, body: [], fingerprint: nil), target: target, pin: nil)
        let two = LocalSendSender.outcome(
            offered: 9, refused: ["r.bin"], failed: [("d.jpg", damaged), ("b.jpg", refused)], untried: ["u1", "u2", "u3"], target: target)
        #expect(two?.code == "integrity")
        #expect(two?.errorDescription?.contains("3 of 9 files arrived; not d.jpg, b.jpg, r.bin, u1, u2, and 1 more") == true, "\(two?.errorDescription ?? "")")
        // A file the device's person left out is its choice, not a failure (the app's "skipped").
        #expect(LocalSendSender.outcome(offered: 2, refused: ["x"], failed: [], untried: [], target: target) == nil)
    }

    // MARK: certificate dates

    @Test func ourCertificateIsValidFrom1975To4096AsTheOfficialApps() throws {
        let identity = try LocalSendIdentity.make()
        let certificate = try Certificate(pemEncoded: identity.certificatePEM)
        #expect(certificate.notValidBefore == Date(timeIntervalSince1970: 157_766_400))
        #expect(certificate.notValidAfter == Date(timeIntervalSince1970: 67_090_118_400))
        #expect(LocalSendIdentity.hasWideDates(pem: identity.certificatePEM))
    }

    /// A peer whose clock is two days behind (an injected validation time) finds our certificate
    /// within its dates; it did not find the one nearby made before (valid from a day before it was
    /// made). (e2e `test_localsend_phone_a_clock_two_days_behind_accepts_the_certificate` asks
    /// OpenSSL's verifier, `-attime`, the same of the certificate a built nearby stores.)
    @Test func aPeerWhoseClockIsTwoDaysBehindAcceptsOurCertificate() throws {
        let twoDaysBehind = Date().addingTimeInterval(-2 * 86400)
        func within(_ pem: String) throws -> Bool {
            let certificate = try Certificate(pemEncoded: pem)
            return certificate.notValidBefore <= twoDaysBehind && twoDaysBehind <= certificate.notValidAfter
        }
        #expect(try within(try LocalSendIdentity.make().certificatePEM))
        #expect(try !within(try Self.narrow().certificatePEM))
    }

    /// A certificate as nearby made them before: valid from a day before it was made, for ten years.
    static func narrow(key: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) throws -> LocalSendIdentity {
        let now = Date()
        let name = try DistinguishedName { CommonName("nearby LocalSend") }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-86400), notValidAfter: now.addingTimeInterval(86400 * 3650),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions {}, issuerPrivateKey: Certificate.PrivateKey(key))
        let document = try certificate.serializeAsPEM()
        return LocalSendIdentity(
            certificatePEM: document.pemString, privateKeyPEM: key.pemRepresentation,
            fingerprint: LocalSendIdentity.fingerprint(ofDER: document.derBytes), created: now)
    }

    @Test func aStoredCertificateWithTheOldDatesIsReissuedOnceWithTheSameKey() throws {
        let home = temporary() + "/home"
        let store = LocalSendIdentityStore(paths: NearbyPaths(home: home))
        _ = try store.loadOrCreate()
        // Written as an earlier nearby wrote it.
        let old = try Self.narrow()
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let file = LocalSendIdentityStore.File(
            version: 1, certificate: old.certificatePEM, privateKey: old.privateKeyPEM, fingerprint: old.fingerprint, created: old.created)
        try encoder.encode(file).write(to: URL(fileURLWithPath: store.path))
        let renewed = try store.loadOrCreate()
        #expect(renewed.renewedFrom == old.fingerprint)
        #expect(renewed.fingerprint != old.fingerprint)
        #expect(renewed.privateKeyPEM == old.privateKeyPEM)
        #expect(LocalSendIdentity.hasWideDates(pem: renewed.certificatePEM))
        let again = try store.loadOrCreate()
        #expect(again.renewedFrom == nil && again.fingerprint == renewed.fingerprint)
        let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }

    // MARK: a known alias with a new fingerprint

    private func offerFrom(_ alias: String, fingerprint: String) -> [UInt8] {
        Array(#"{"info":{"alias":"\#(alias)","fingerprint":"\#(fingerprint)","version":"2.1"},"files":{"f1":{"id":"f1","fileName":"a.jpg","size":3,"fileType":"image/jpeg"}}}"#.utf8)
    }

    @Test func aKnownAliasWithANewFingerprintIsAWarningUnderAutoAcceptAsTheOfficialAppTrustsByFingerprint() async throws {
        let home = temporary()
        let known = LocalSendKnownDevices(paths: NearbyPaths(home: home))
        known.remember(alias: "Pixel 8", fingerprint: String(repeating: "A", count: 64))
        var policy = LocalSendPolicy(saveDirectory: temporary(), pin: nil)
        policy.autoAccept = true
        let (receiver, sink) = receiver(policy, home: home)
        let answer = await receiver.handle(prepare, body: ReceiverTests.body([offerFrom("Pixel 8", fingerprint: String(repeating: "b", count: 64))]))
        #expect(answer.status == 200)
        #expect(sink.lines.contains { $0.contains(#""event":"fingerprint-changed""#) && $0.contains(String(repeating: "B", count: 64)) })
        // The pin stays: the device first seen by that name.
        #expect(known.pinned(alias: "Pixel 8") == String(repeating: "A", count: 64))
    }

    @Test func aKnownAliasWithANewFingerprintIsRefusedWhereTheAliasItselfWasTrusted() async throws {
        let home = temporary()
        let known = LocalSendKnownDevices(paths: NearbyPaths(home: home))
        known.remember(alias: "Pixel 8", fingerprint: String(repeating: "A", count: 64))
        var policy = LocalSendPolicy(saveDirectory: temporary(), pin: nil)
        policy.acceptFrom = ["Pixel 8"]
        let (receiver, sink) = receiver(policy, home: home)
        let answer = await receiver.handle(prepare, body: ReceiverTests.body([offerFrom("Pixel 8", fingerprint: String(repeating: "b", count: 64))]))
        #expect(answer.status == 403)
        #expect(sink.lines.contains { $0.contains(#""event":"declined""#) && $0.contains("FINGERPRINT CHANGED") })
        // Trusted by its ID (a prefix of the certificate's): the new device is another one, not that one.
        let id = LocalSendDevice.peerID(fingerprint: String(repeating: "b", count: 64))
        policy.acceptFrom = [String(id.prefix(8))]
        let (byID, _) = self.receiver(policy, home: home)
        #expect(await byID.handle(prepare, body: ReceiverTests.body([offerFrom("Pixel 8", fingerprint: String(repeating: "b", count: 64))])).status == 200)
    }

    // MARK: cancels

    /// As the official sender (`onCancelReceived`): only a cancel naming our session, from the
    /// receiver's address (and, when it shows one, the receiver's certificate), stops us.
    @Test func theReceiversCancelIsHeardOnlyFromItsAddressAndCertificate() async {
        let watch = LocalSendCancelWatch()
        var target = LocalSendTarget(host: "10.0.0.2", port: 53317)
        target.fingerprint = String(repeating: "A", count: 64)
        func cancel(_ session: String, host: String, shown: String? = nil) -> LocalSendRequest {
            var request = LocalSendRequest(method: .POST, path: "/api/localsend/v2/cancel", query: ["sessionId": session])
            request.host = host
            request.clientFingerprint = shown
            return request
        }
        #expect(!watch.hear(cancel("s1", host: "10.0.0.2")))
        watch.expect(session: "s1", from: target)
        #expect(!watch.hear(cancel("s2", host: "10.0.0.2")))
        #expect(!watch.hear(cancel("s1", host: "10.0.0.66")))
        #expect(!watch.hear(cancel("s1", host: "10.0.0.2", shown: String(repeating: "B", count: 64))))
        #expect(!watch.heard)
        let routes = SendingRoutes(me: DeviceMessage(alias: "me", fingerprint: "m"), watch: watch)
        #expect(await routes.handle(cancel("s1", host: "10.0.0.2", shown: String(repeating: "a", count: 64)), body: ReceiverTests.body([])).status == 200)
        #expect(watch.heard)
        await watch.cancelled()
        #expect(await routes.handle(LocalSendRequest(method: .POST, path: "/api/localsend/v2/prepare-upload"), body: ReceiverTests.body([])).status == 404)
    }

    /// As the official receiver (`cancelSession`): a session this node ends early is cancelled at
    /// its sender, at the port and protocol the sender's info named.
    @Test func aSessionThisNodeEndsIsCancelledAtItsSender() async throws {
        var policy = LocalSendPolicy(saveDirectory: temporary(), pin: nil)
        policy.autoAccept = true
        let (receiver, _) = receiver(policy, home: temporary())
        let offer = #"{"info":{"alias":"Pixel 8","fingerprint":"\#(String(repeating: "d", count: 64))","version":"2.1","port":53318,"protocol":"http"},"files":{"f1":{"id":"f1","fileName":"a.jpg","size":3,"fileType":"image/jpeg"}}}"#
        var request = prepare
        request.host = "10.0.0.9"
        let answer = await receiver.handle(request, body: ReceiverTests.body([Array(offer.utf8)]))
        #expect(answer.status == 200)
        let session = try JSONDecoder().decode(Tokens.self, from: Data(answer.body)).sessionId
        let open = await receiver.endAll()
        #expect(open.count == 1)
        #expect(open.first?.session == session)
        #expect(open.first.map { ($0.sender.host, $0.sender.port, $0.sender.https) } ?? ("", 0, true) == ("10.0.0.9", 53318, false))
        #expect(await receiver.endAll().isEmpty)
    }

    // MARK: long texts

    private func textOffer(_ text: String) throws -> [UInt8] {
        let file: [String: Any] = ["id": "t1", "fileName": "message.txt", "size": text.utf8.count, "fileType": "text/plain", "preview": text]
        let info: [String: Any] = ["alias": "Pixel 8", "fingerprint": String(repeating: "c", count: 64), "version": "2.1"]
        return Array(try JSONSerialization.data(withJSONObject: ["info": info, "files": ["t1": file]]))
    }

    @Test func aTextOf100KiBArrivesAsAMessageAndOneOver1MiBIsRefusedInWords() async throws {
        var policy = LocalSendPolicy(saveDirectory: nil, pin: nil)
        policy.autoAccept = true
        let (receiver, sink) = receiver(policy, home: temporary())
        let long = String(repeating: "a line of text, ", count: 6400)
        let body = try textOffer(long)
        let answer = await receiver.handle(prepare, body: ReceiverTests.body(stride(from: 0, to: body.count, by: 4096).map { Array(body[$0..<min(body.count, $0 + 4096)]) }))
        #expect(answer.status == 204)
        #expect(sink.lines.contains { $0.contains(#""event":"message""#) && $0.contains(String(long.prefix(200))) })
        let tooLong = await receiver.handle(prepare, body: ReceiverTests.body([try textOffer(String(repeating: "x", count: 1_100_000))]))
        #expect(tooLong.status == 413)
        #expect(String(decoding: tooLong.body, as: UTF8.self).contains("a text message"))
        // A file's entry (not a text) is still held to 16 KiB.
        var file = PrepareUploadList()
        let name = String(repeating: "n", count: 20_000)
        #expect(throws: PrepareUploadList.Failure.self) {
            _ = try file.feed(Array(#"{"info":{"alias":"a"},"files":{"f":{"id":"f","fileName":"\#(name)","size":1,"preview":"x"}}}"#.utf8))
        }
    }
}
