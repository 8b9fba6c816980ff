//! The page's ends over kernel TCP: HTTP/1.1 on up to `max_connections` connections or HTTP/2
//! on one, locally and over `--remote`.

use super::*;

/// A page's lane over kernel TCP, as `--http` says.
pub(super) enum TcpLane {
    H1(Http1Lane),
    H2(Http2Lane),
}

impl Lane for TcpLane {
    async fn exchange(&mut self, ask: Ask<'_>, on_begin: &mut dyn FnMut()) -> Result<u64, String> {
        match self {
            TcpLane::H1(l) => l.exchange(ask, on_begin).await,
            TcpLane::H2(l) => l.exchange(ask, on_begin).await,
        }
    }
}

/// The page's ends over kernel TCP: connections dialled from sockets made before navigation
/// start (a new one for a replacement), HTTP/1.1 or HTTP/2 on each.
pub(super) struct TcpEnds<'a> {
    ctx: &'a Ctx<'a>,
    dial: &'a Dial<'a>,
    host: String,
    /// Made up front (making one is no network traffic), taken in turn.
    sockets: Mutex<Vec<std::net::TcpStream>>,
    connections: usize,
    next_conn_id: AtomicU32,
}

impl<'a> TcpEnds<'a> {
    pub(super) fn new(ctx: &'a Ctx<'a>, dial: &'a Dial<'a>, sockets: Vec<std::net::TcpStream>) -> Self {
        let connections = sockets.len();
        let mut sockets = sockets;
        // Taken from the back: the first socket first.
        sockets.reverse();
        TcpEnds { ctx, dial, host: dial.host(), sockets: Mutex::new(sockets), connections, next_conn_id: AtomicU32::new(0) }
    }

    /// The page on a first connection, its failure to open recorded.
    pub(super) async fn load(&self) {
        match self.open().await {
            Ok(first) => load(self.ctx, self, first).await,
            Err(e) => lock(self.ctx.log).errors.push(format!("opening the first connection: {e}")),
        }
    }
}

impl Ends for TcpEnds<'_> {
    type Lane = TcpLane;

    fn beside(&self, lane: &TcpLane) -> Option<TcpLane> {
        match lane {
            TcpLane::H1(_) => None,
            TcpLane::H2(l) => Some(TcpLane::H2(l.clone())),
        }
    }

    fn connections(&self) -> usize {
        self.connections
    }

    async fn open(&self) -> Result<PageConn<TcpLane>, String> {
        let ctx = self.ctx;
        let made = lock(&self.sockets).pop();
        let sock = match made {
            Some(sock) => sock,
            // The client sends only requests: its sockets keep the default algorithm.
            None => self.dial.sockets(1, None).map_err(|e| e.to_string())?.remove(0),
        };
        let opened = Instant::now();
        let stream = self.dial.connect(sock).await.map_err(|e| format!("connecting: {e}"))?;
        let client_port = stream.local_addr().map_err(|e| e.to_string())?.port();
        let io = TokioIo::new(stream);
        let host = self.host.clone();
        let lane = match ctx.spec.protocol {
            PageProtocol::Http1 { .. } => {
                let (sender, conn) = hyper::client::conn::http1::Builder::new().handshake(io).await.map_err(|e| format!("HTTP/1.1 handshake: {e}"))?;
                tokio::spawn(conn);
                TcpLane::H1(Http1Lane { sender, host })
            }
            PageProtocol::Http2 => {
                let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
                    .timer(TokioTimer::new())
                    .initial_stream_window_size(6 * 1024 * 1024)
                    .initial_connection_window_size(15 * 1024 * 1024)
                    .handshake(io)
                    .await
                    .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
                tokio::spawn(conn);
                TcpLane::H2(Http2Lane { sender, host })
            }
        };
        let id = self.next_conn_id.fetch_add(1, Ordering::SeqCst);
        let mut log = lock(ctx.log);
        log.conns.push(ConnStats { id, client_port, opened: ctx.after_start(opened), completed: 0, bytes: 0 });
        Ok(PageConn { id, slot: log.conns.len() - 1, lane })
    }

    fn closed(&self, lane: &TcpLane) -> bool {
        match lane {
            TcpLane::H1(l) => l.sender.is_closed(),
            TcpLane::H2(l) => l.sender.is_closed(),
        }
    }

    fn name(&self, path: &str, conn: u32) -> String {
        format!("{path} on connection {conn}")
    }
}
