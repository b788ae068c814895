import Crypto
import Foundation
import NIOSSL
import X509
import NearbyBase
import NearbyIdentity
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What this machine shows LocalSend devices: a self-signed certificate whose SHA-256 (of its DER
/// bytes, UPPERCASE hex, as the official app writes it) is the fingerprint LocalSend announces. Its own key, not the nearby
/// identity's: LocalSend's weaker model never gets to sign with the key nearby sessions trust.
package struct LocalSendIdentity: Sendable {
    package let certificatePEM: String
    package let privateKeyPEM: String
    package let fingerprint: String
    package let created: Date
    /// The fingerprint this identity had before it was re-issued with wide dates on this load
    /// (`LocalSendIdentityStore.loadOrCreate`); nil when it was not.
    package var renewedFrom: String? = nil

    /// The certificate as DER bytes, for TLS.
    package var certificateDER: [UInt8] { Self.der(ofPEM: certificatePEM) ?? [] }

    static func der(ofPEM pem: String) -> [UInt8]? {
        try? NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem).toDERBytes()
    }

    /// SHA-256 of a certificate's DER bytes, uppercase hex: LocalSend's fingerprint, as the official
    /// app computes it (`fingerprint_from_cert_der` in localsend/localsend `packages/core`). Peers
    /// that follow it compare fingerprints as written; nearby compares every one it reads without
    /// regard to case (`sameFingerprint`).
    package static func fingerprint(ofDER der: some DataProtocol) -> String {
        Hex.encode(SHA256.hash(data: der)).uppercased()
    }

    /// Whether two fingerprints are the same, whatever the case of their hex digits.
    package static func sameFingerprint(_ a: String, _ b: String) -> Bool { a.uppercased() == b.uppercased() }

    /// The validity the official app's certificates have (rcgen's default, which its core keeps:
    /// `packages/core/src/crypto/cert.rs`): 1975-01-01 to 4096-01-01, so that a device whose clock
    /// is wrong (a Raspberry Pi without a real-time clock boots days behind) still accepts it, and
    /// it never expires. LocalSend 1.18 refuses a certificate outside its dates, both ways.
    static let validFrom = Date(timeIntervalSince1970: 157_766_400)
    static let validUntil = Date(timeIntervalSince1970: 67_090_118_400)

    /// Whether a certificate's dates are as wide as the official app's (within a day of them).
    static func hasWideDates(pem: String) -> Bool {
        guard let certificate = try? Certificate(pemEncoded: pem) else { return false }
        return certificate.notValidBefore <= validFrom.addingTimeInterval(86400)
            && certificate.notValidAfter >= validUntil.addingTimeInterval(-86400)
    }

    /// A new certificate, valid `validFrom` to `validUntil`, for `key` (a new one when nil).
    static func make(now: Date = Date(), key: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) throws -> LocalSendIdentity {
        let name = try DistinguishedName { CommonName("nearby LocalSend") }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: validFrom, notValidAfter: validUntil,
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions {}, issuerPrivateKey: Certificate.PrivateKey(key))
        let document = try certificate.serializeAsPEM()
        let der = document.derBytes
        let pem = document.pemString
        return LocalSendIdentity(
            certificatePEM: pem, privateKeyPEM: key.pemRepresentation, fingerprint: fingerprint(ofDER: der), created: now)
    }
}

/// Keeps the LocalSend identity in `$NEARBY_HOME/localsend.json` (mode 0600), beside nearby's own
/// identity: made once, atomically (a private temporary file `link(2)`ed to the final name, so two
/// first runs agree on one), then reused, so devices remember this machine by the same fingerprint.
package struct LocalSendIdentityStore: Sendable {
    package let path: String
    static let fileVersion = 1

    package init(paths: NearbyPaths) { path = paths.home + "/localsend.json" }

    struct File: Codable {
        var version: Int
        var certificate: String
        var privateKey: String
        var fingerprint: String
        var created: Date
    }

    package func load() throws(NearbyError) -> LocalSendIdentity? {
        guard let data = try IdentityStore.read(path) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let file = try? decoder.decode(File.self, from: data), file.version == Self.fileVersion else {
            throw .identityCorrupt(path: path, reason: "not a LocalSend identity of version \(Self.fileVersion)")
        }
        guard let der = LocalSendIdentity.der(ofPEM: file.certificate),
              (try? P256.Signing.PrivateKey(pemRepresentation: file.privateKey)) != nil
        else { throw .identityCorrupt(path: path, reason: "its certificate or key cannot be read") }
        // The fingerprint is recomputed, never taken from the file: an edited file cannot claim another.
        let fingerprint = LocalSendIdentity.fingerprint(ofDER: der)
        guard LocalSendIdentity.sameFingerprint(fingerprint, file.fingerprint) else {
            throw .identityCorrupt(path: path, reason: "its fingerprint does not match its certificate")
        }
        return LocalSendIdentity(
            certificatePEM: file.certificate, privateKeyPEM: file.privateKey, fingerprint: fingerprint, created: file.created)
    }

    /// The stored identity, else a new one. One stored with the narrow dates nearby gave its
    /// certificates before (a day before it was made, for ten years) is re-issued once with the
    /// same key and the official app's dates (`renewedFrom` says the fingerprint it had: a
    /// device that remembered that one sees a new fingerprint for this machine).
    package func loadOrCreate() throws(NearbyError) -> LocalSendIdentity {
        if let identity = try load() {
            if LocalSendIdentity.hasWideDates(pem: identity.certificatePEM) { return identity }
            return try renew(identity)
        }
        let made: LocalSendIdentity
        do { made = try LocalSendIdentity.make() } catch {
            throw .identityIO(path: path, reason: "cannot make a certificate: \(error)")
        }
        try ensureDirectory()
        let temporary = try writeTemporary(made)
        defer { _ = unlink(temporary) }
        if link(temporary, path) != 0, errno != EEXIST {
            throw .identityIO(path: path, reason: String(cString: strerror(errno)))
        }
        // Whoever won a race of first runs, the file on disk is the identity.
        guard let stored = try load() else { throw .identityIO(path: path, reason: "it vanished right after creation") }
        if !LocalSendIdentity.hasWideDates(pem: stored.certificatePEM) { return try renew(stored) }
        return stored
    }

    /// Re-issues `old`'s certificate with the wide dates and the same key, under a lock on the
    /// file (`flock`, waited for at most 5 s) so that two commands started at once agree on one
    /// certificate: the second finds it re-issued already.
    func renew(_ old: LocalSendIdentity) throws(NearbyError) -> LocalSendIdentity {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .identityIO(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var locked = false
        for _ in 0..<100 {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                locked = true
                break
            }
            usleep(50_000)
        }
        guard locked else { throw .identityIO(path: path, reason: "another nearby holds it for more than 5 s") }
        defer { _ = flock(fd, LOCK_UN) }
        guard let current = try load() else { throw .identityIO(path: path, reason: "it vanished while being re-issued") }
        if LocalSendIdentity.hasWideDates(pem: current.certificatePEM) { return current }
        let made: LocalSendIdentity
        do {
            let key = try P256.Signing.PrivateKey(pemRepresentation: current.privateKeyPEM)
            made = try LocalSendIdentity.make(now: current.created, key: key)
        } catch {
            throw .identityIO(path: path, reason: "cannot re-issue its certificate: \(error)")
        }
        let temporary = try writeTemporary(made)
        defer { _ = unlink(temporary) }
        guard rename(temporary, path) == 0 else { throw .identityIO(path: path, reason: String(cString: strerror(errno))) }
        guard var stored = try load() else { throw .identityIO(path: path, reason: "it vanished right after it was re-issued") }
        stored.renewedFrom = old.fingerprint
        return stored
    }

    private func ensureDirectory() throws(NearbyError) {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .identityIO(path: path, reason: "cannot create \(directory): \(error.localizedDescription)")
        }
    }

    /// The identity written whole and synced to a private temporary file beside `path`; its name.
    private func writeTemporary(_ made: LocalSendIdentity) throws(NearbyError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let file = File(
            version: Self.fileVersion, certificate: made.certificatePEM, privateKey: made.privateKeyPEM,
            fingerprint: made.fingerprint, created: made.created)
        guard let data = try? encoder.encode(file) else { throw .identityIO(path: path, reason: "cannot encode") }
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .identityIO(path: temporary, reason: String(cString: strerror(errno))) }
        let bytes = Array(data) + [UInt8(ascii: "\n")]
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced else {
            unlink(temporary)
            throw .identityIO(path: temporary, reason: "cannot write it whole")
        }
        return temporary
    }
}
