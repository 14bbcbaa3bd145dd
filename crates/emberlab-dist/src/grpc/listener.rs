//! The accept loop in front of the gRPC server: a connection past the caps is closed at
//! once, a connection that does not start talking in time is closed, and when the process
//! runs out of descriptors the loop backs off instead of spinning.

use super::limits::{ConnSlot, Counters, Peers};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Sleep;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Bytes a new connection must send within the handshake timeout: the HTTP/2 client
/// preface (a TLS ClientHello is longer; its handshake has its own timeout in tonic).
const PREFACE_BYTES: usize = 24;

/// The accept loop's longest pause when descriptors or memory run out.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// A connection the server took in: it holds its place in the peers' book until dropped,
/// and fails its reads once the handshake deadline passes before the preface arrived.
pub(crate) struct Guarded {
    io: TcpStream,
    _slot: ConnSlot,
    deadline: Option<Pin<Box<Sleep>>>,
    read: usize,
    counters: std::sync::Arc<Counters>,
}

impl Connected for Guarded {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.io.connect_info()
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        let result = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Some(deadline) = this.deadline.as_mut() {
            match &result {
                Poll::Ready(Ok(())) => {
                    this.read += buf.filled().len() - before;
                    if this.read >= PREFACE_BYTES {
                        this.deadline = None;
                    }
                }
                Poll::Pending if deadline.as_mut().poll(cx).is_ready() => {
                    this.deadline = None;
                    Counters::bump(&this.counters.handshakes);
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the connection sent no HTTP/2 preface in time",
                    )));
                }
                _ => {}
            }
        }
        result
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// Whether an accept error means the process ran out of something (descriptors, buffers,
/// memory) rather than one connection failing: then the loop waits before the next try.
fn exhausted(e: &io::Error) -> bool {
    !matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// Accepts connections from `listener` on the current runtime and yields those within the
/// caps of `peers`, with `TCP_NODELAY` set (an answer larger than a segment would
/// otherwise wait for the peer's delayed acknowledgement). Ends when the stream is dropped.
pub(crate) fn incoming(
    listener: TcpListener,
    peers: Peers,
    handshake_timeout: Duration,
) -> ReceiverStream<io::Result<Guarded>> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(5);
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                () = tx.closed() => return,
            };
            match accepted {
                Ok((io, addr)) => {
                    backoff = Duration::from_millis(5);
                    // Past a cap: closed at once (dropped), counted in the book.
                    let Ok(slot) = peers.connect(addr.ip()) else {
                        continue;
                    };
                    let _ = io.set_nodelay(true);
                    let guarded = Guarded {
                        io,
                        _slot: slot,
                        deadline: Some(Box::pin(tokio::time::sleep(handshake_timeout))),
                        read: 0,
                        counters: peers.counters.clone(),
                    };
                    if tx.send(Ok(guarded)).await.is_err() {
                        return;
                    }
                }
                Err(e) if exhausted(&e) => {
                    Counters::bump(&peers.counters.accept_backoffs);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(_) => {}
            }
        }
    });
    ReceiverStream::new(rx)
}
