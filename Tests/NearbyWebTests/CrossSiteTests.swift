import Testing
@testable import NearbyWeb

/// The pages answer their own page and no page, never a page on another site (`CrossSite`).
@Suite struct CrossSiteTests {
    let host = "10.99.0.1:8080"

    @Test func theOwnPageAndNoPageAreAnswered() {
        #expect(CrossSite.refusal(method: "POST", origin: nil, fetchSite: nil, host: host) == nil)
        #expect(CrossSite.refusal(method: "POST", origin: "http://10.99.0.1:8080", fetchSite: "same-origin", host: host) == nil)
        #expect(CrossSite.refusal(method: "POST", origin: "HTTP://10.99.0.1:8080", fetchSite: nil, host: host) == nil)
        #expect(CrossSite.refusal(method: "POST", origin: "http://10.99.0.1", fetchSite: nil, host: "10.99.0.1:80") == nil)
        #expect(CrossSite.refusal(method: "GET", origin: nil, fetchSite: "none", host: host) == nil)
        // An opaque origin that the browser says is the page's own.
        #expect(CrossSite.refusal(method: "POST", origin: "null", fetchSite: "same-origin", host: host) == nil)
        // A link on another site opens the page (a navigation sends no Origin).
        #expect(CrossSite.refusal(method: "GET", origin: nil, fetchSite: "cross-site", host: host) == nil)
    }

    @Test func anotherSiteIsRefused() {
        #expect(CrossSite.refusal(method: "POST", origin: "http://evil.example", fetchSite: nil, host: host) != nil)
        #expect(CrossSite.refusal(method: "POST", origin: "null", fetchSite: nil, host: host) != nil)
        #expect(CrossSite.refusal(method: "POST", origin: "null", fetchSite: "cross-site", host: host) != nil)
        #expect(CrossSite.refusal(method: "POST", origin: "http://10.99.0.1:8081", fetchSite: nil, host: host) != nil)
        #expect(CrossSite.refusal(method: "POST", origin: "https://10.99.0.1:8080", fetchSite: nil, host: host) != nil)
        #expect(CrossSite.refusal(method: "POST", origin: "http://10.99.0.1:8080", fetchSite: nil, host: nil) != nil)
        #expect(CrossSite.refusal(method: "POST", origin: nil, fetchSite: "cross-site", host: host) != nil)
        #expect(CrossSite.refusal(method: "POST", origin: nil, fetchSite: "same-site", host: host) != nil)
        #expect(CrossSite.refusal(method: "GET", origin: "http://evil.example", fetchSite: "cross-site", host: host) != nil)
    }
}

/// Inline script is allowed only on the page that has some (the upload page).
@Suite struct PagePolicyTests {
    @Test func onlyTheUploadPageMayRunInlineScript() {
        let share = WebPages.securityHeaders(script: false).first { $0.0 == "Content-Security-Policy" }?.1 ?? ""
        let upload = WebPages.securityHeaders(script: true).first { $0.0 == "Content-Security-Policy" }?.1 ?? ""
        #expect(share.hasPrefix("default-src 'none'") && !share.contains("script-src") && !share.contains("connect-src"))
        #expect(upload.contains("script-src 'unsafe-inline'"))
        #expect(!WebPages.share(device: "d", items: []).contains("<script"))
        #expect(WebPages.upload(device: "d").contains("<script"))
    }
}
