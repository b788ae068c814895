import NIOCore
import NIOHTTP1
import Synchronization
import NearbyBase
import NearbyHTTP

/// The web pages' HTTP server: plain HTTP/1.1 on the node's one HTTP serving layer (`HTTPServer`:
/// every connection admitted by the core's `Admission` as it is accepted, its request head bounded
/// in size by NIOHTTP1's decoder limits and in time by the admission's `handshake` and `idle`).
/// What the routes do is `WebSite`'s.
package struct WebServer: Sendable {
    let server: HTTPServer
    package var port: Int { server.port }

    /// Listens on every address (`port` 0: any free port).
    package static func bind(port: Int, admission: Admission) async throws(NearbyError) -> WebServer {
        do {
            return WebServer(server: try await HTTPServer.bind(port: port, backlog: 256, admission: admission))
        } catch {
            throw .listenFailed("cannot listen for the web page: \(ErrorWords.listening(error, port: port))")
        }
    }

    /// Serves until cancelled, each admitted connection in its own child task.
    package func run(_ site: some WebSite) async {
        await server.run(WebRoutes(site: site))
    }
}

/// A `WebSite` on the shared server (a URI too long is the layer's 414).
struct WebRoutes<Site: WebSite>: HTTPRoutes {
    let site: Site

    func answer(_ head: HTTPRequestHead, body: HTTPBody, on connection: HTTPConnection, visit: Void) async throws -> Bool {
        let reply = WebReply(
            outbound: connection.outbound, channel: connection.channel, deadline: connection.deadline, idle: connection.idle,
            keepAlive: head.isKeepAlive)
        return try await site.answer(WebRequest(head: head, address: connection.ticket.address), body: body, reply: reply)
    }
}

/// A request as the routes see it.
package struct WebRequest: Sendable {
    package var method: String
    package var uri: String
    package var address: String
    package var headers: HTTPHeaders

    init(head: HTTPRequestHead, address: String) {
        method = head.method.rawValue
        uri = head.uri
        self.address = address
        headers = head.headers
    }

    package init(method: String, uri: String, address: String = "10.0.0.9", headers: HTTPHeaders = [:]) {
        self.method = method
        self.uri = uri
        self.address = address
        self.headers = headers
    }
}

/// What answers the requests: the share (`WebShare`) or the upload page (`WebDropBox`). Returns
/// whether the connection may carry another request.
package protocol WebSite: Sendable {
    func answer(_ request: WebRequest, body: HTTPBody, reply: WebReply) async throws -> Bool
}
