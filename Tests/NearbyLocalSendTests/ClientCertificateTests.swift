import Testing
@testable import NearbyLocalSend

/// Issue 59: our certificate is shown to every device (1.18's server requires one), so one that
/// cannot be loaded is said in words when the client is made, not dropped for a handshake error.
struct ClientCertificateTests {
    @Test func anUnloadableCertificateOrKeyIsSaidInWords() throws {
        let good = try LocalSendIdentity.make()
        _ = try LocalSendHTTP(identity: good)
        let badCertificate = LocalSendIdentity(
            certificatePEM: "-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n", privateKeyPEM: good.privateKeyPEM,
            fingerprint: good.fingerprint, created: good.created)
        #expect { try LocalSendHTTP(identity: badCertificate) } throws: { "\($0)".hasPrefix("its certificate cannot be loaded") }
        let badKey = LocalSendIdentity(
            certificatePEM: good.certificatePEM, privateKeyPEM: "garbage", fingerprint: good.fingerprint, created: good.created)
        #expect { try LocalSendHTTP(identity: badKey) } throws: { "\($0)".hasPrefix("its private key cannot be loaded") }
    }
}
