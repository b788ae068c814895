/// Whether a request to the pages comes from the page itself (or from no page at all: a link typed,
/// scanned or clicked, curl) rather than from a page on another site. A page elsewhere that knows
/// the URL could otherwise post a form into the drop box from a visitor's browser
/// (`fetch(…, {mode: 'no-cors'})`): the token would be the only defence. A browser says where a
/// request comes from in `Origin` (every POST, and cross-origin fetches) and `Sec-Fetch-Site`; the
/// page's own origin is `http://` and the `Host` the browser asked. Pure.
enum CrossSite {
    /// Nil when the request may be answered; else why not, in words for the browser.
    static func refusal(method: String, origin: String?, fetchSite: String?, host: String?) -> String? {
        // `null`: an opaque origin, or a page elsewhere under `Referrer-Policy: no-referrer`. Our
        // pages' policy is `same-origin` so that their own form says its origin (under `no-referrer`
        // it said `null` too); a browser sends `Sec-Fetch-Site` only to HTTPS or localhost.
        if let origin, origin.lowercased() == "null" {
            guard fetchSite?.lowercased() == "same-origin" else {
                return "this page answers only itself, and the request came from a page that does not say where it is (Origin: null)."
            }
        } else if let origin {
            guard let host, normalized(origin) == normalized("http://" + host) else {
                return "this page answers only itself, and the request came from another site (\(origin.prefix(100)))."
            }
        }
        // A navigation from a link elsewhere is fine (`cross-site` on a GET); a POST is not.
        if method == "POST", let site = fetchSite?.lowercased(), site != "same-origin", site != "none" {
            return "this page takes files only from its own form, and the request came from another site."
        }
        return nil
    }

    /// Lowercased, without the default port.
    static func normalized(_ origin: String) -> String {
        let lower = origin.lowercased()
        return lower.hasSuffix(":80") ? String(lower.dropLast(3)) : lower
    }
}

extension WebRequest {
    /// Why this request is refused as coming from another site, or nil (`CrossSite`).
    var crossSite: String? {
        CrossSite.refusal(
            method: method, origin: headers.first(name: "Origin"), fetchSite: headers.first(name: "Sec-Fetch-Site"),
            host: headers.first(name: "Host"))
    }
}
