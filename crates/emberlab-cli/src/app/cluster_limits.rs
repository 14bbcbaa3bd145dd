//! `ember serve`'s flags for what one peer may take of the learner (emberlab-dist's
//! `GrpcLimits`) and what a transition may hold; each unset flag keeps the default.

use anyhow::{Result, bail};
use clap::Args;
use emberlab_dist::GrpcLimits;
use emberlab_dist::cluster::{DEFAULT_LOG_BUDGET, DEFAULT_MAX_ABS};
use std::time::Duration;

#[derive(Args, Debug, Clone, Default)]
pub struct ServeLimits {
    /// Most TCP connections held at once (default 512, lowered to what the descriptor
    /// limit leaves).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Most TCP connections one IP address holds at once (default 128).
    #[arg(long, value_name = "N")]
    pub max_connections_per_peer: Option<usize>,
    /// Most concurrent calls on one connection (default 8).
    #[arg(long, value_name = "N")]
    pub max_streams_per_connection: Option<u32>,
    /// Most actor streams held at once (default 1024).
    #[arg(long, value_name = "N")]
    pub max_streams: Option<usize>,
    /// Most actor streams one peer (client certificate, else IP address) holds at once
    /// (default 256).
    #[arg(long, value_name = "N")]
    pub max_streams_per_peer: Option<usize>,
    /// Rows per second one peer may send over all its streams (default 1000000).
    #[arg(long, value_name = "ROWS")]
    pub peer_rows_per_sec: Option<f64>,
    /// Request bytes per second one peer may send (default 268435456).
    #[arg(long, value_name = "BYTES")]
    pub peer_bytes_per_sec: Option<f64>,
    /// Info and Policy calls per second one peer may make (default 20000).
    #[arg(long, value_name = "CALLS")]
    pub peer_unary_per_sec: Option<f64>,
    /// Seconds a new connection has to finish its TLS handshake or send the HTTP/2
    /// preface (default 10).
    #[arg(long, value_name = "SECS")]
    pub handshake_timeout_secs: Option<f64>,
    /// Messages per second read from one stream (default 100000).
    #[arg(long, value_name = "MESSAGES")]
    pub max_stream_rate: Option<f64>,
    /// Largest message accepted or sent, bytes (default 4194304).
    #[arg(long, value_name = "BYTES")]
    pub max_message_bytes: Option<usize>,
    /// Most rows in one request or transition batch (default 4096).
    #[arg(long, value_name = "N")]
    pub max_rows: Option<usize>,
    /// Seconds between HTTP/2 keepalive pings; one unanswered as long closes the
    /// connection (default 20).
    #[arg(long, value_name = "SECS")]
    pub keepalive_secs: Option<f64>,
    /// Seconds a stream may send nothing before it is closed (default 120).
    #[arg(long, value_name = "SECS")]
    pub stream_idle_secs: Option<f64>,
    /// Disk budget of the write-ahead log, MiB: past it, acknowledgements wait until a
    /// checkpoint lets the oldest segments go (default 8192).
    #[arg(long, value_name = "MIB")]
    pub log_budget_mib: Option<f64>,
    /// Largest magnitude of an observation, continuous action or reward in a transition;
    /// a batch beyond it is refused (default 1e6).
    #[arg(long, value_name = "VALUE")]
    pub max_abs_value: Option<f32>,
}

fn positive_secs(flag: &str, secs: f64) -> Result<Duration> {
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => bail!("invalid {flag}: got {secs}, expected a positive number of seconds"),
    }
}

fn at_least_one<T: PartialOrd + From<u8> + std::fmt::Display + Copy>(
    flag: &str,
    v: Option<T>,
    default: T,
) -> Result<T> {
    match v {
        Some(v) if v < T::from(1) => bail!("invalid {flag}: got {v}, expected at least 1"),
        Some(v) => Ok(v),
        None => Ok(default),
    }
}

fn rate(flag: &str, v: Option<f64>, default: f64) -> Result<f64> {
    match v {
        Some(v) if v.is_nan() || v <= 0.0 => {
            bail!("invalid {flag}: got {v}, expected a positive rate")
        }
        Some(v) => Ok(v),
        None => Ok(default),
    }
}

impl ServeLimits {
    /// The log's disk budget in bytes these flags set.
    ///
    /// # Errors
    /// A budget under 1 MiB.
    pub fn log_budget(&self) -> Result<u64> {
        match self.log_budget_mib {
            Some(m) if m.is_nan() || m < 1.0 => {
                bail!("invalid --log-budget-mib: got {m}, expected at least 1")
            }
            Some(m) => Ok((m * (1u64 << 20) as f64) as u64),
            None => Ok(DEFAULT_LOG_BUDGET),
        }
    }

    /// The limits and the largest transition value these flags set.
    ///
    /// # Errors
    /// A count below 1, a rate or timeout that is not positive, a bound that is not a
    /// positive number.
    pub fn resolve(&self) -> Result<(GrpcLimits, f32)> {
        let d = GrpcLimits::default();
        let limits = GrpcLimits {
            max_connections: at_least_one(
                "--max-connections",
                self.max_connections,
                d.max_connections,
            )?,
            max_connections_per_peer: at_least_one(
                "--max-connections-per-peer",
                self.max_connections_per_peer,
                d.max_connections_per_peer,
            )?,
            max_streams_per_connection: at_least_one(
                "--max-streams-per-connection",
                self.max_streams_per_connection,
                d.max_streams_per_connection,
            )?,
            max_streams: at_least_one("--max-streams", self.max_streams, d.max_streams)?,
            max_streams_per_peer: at_least_one(
                "--max-streams-per-peer",
                self.max_streams_per_peer,
                d.max_streams_per_peer,
            )?,
            peer_rows_per_sec: rate(
                "--peer-rows-per-sec",
                self.peer_rows_per_sec,
                d.peer_rows_per_sec,
            )?,
            peer_bytes_per_sec: rate(
                "--peer-bytes-per-sec",
                self.peer_bytes_per_sec,
                d.peer_bytes_per_sec,
            )?,
            peer_unary_per_sec: rate(
                "--peer-unary-per-sec",
                self.peer_unary_per_sec,
                d.peer_unary_per_sec,
            )?,
            handshake_timeout: self
                .handshake_timeout_secs
                .map(|s| positive_secs("--handshake-timeout-secs", s))
                .transpose()?
                .unwrap_or(d.handshake_timeout),
            max_stream_rate: rate("--max-stream-rate", self.max_stream_rate, d.max_stream_rate)?,
            max_message_bytes: match self.max_message_bytes {
                Some(b) if b < 1024 => {
                    bail!("invalid --max-message-bytes: got {b}, expected at least 1024")
                }
                b => b.unwrap_or(d.max_message_bytes),
            },
            max_rows: at_least_one("--max-rows", self.max_rows, d.max_rows)?,
            keepalive: self
                .keepalive_secs
                .map(|s| positive_secs("--keepalive-secs", s))
                .transpose()?
                .unwrap_or(d.keepalive),
            stream_idle_timeout: self
                .stream_idle_secs
                .map(|s| positive_secs("--stream-idle-secs", s))
                .transpose()?
                .unwrap_or(d.stream_idle_timeout),
        };
        let max_abs = match self.max_abs_value {
            Some(v) if !v.is_finite() || v <= 0.0 => {
                bail!("invalid --max-abs-value: got {v}, expected a positive finite number")
            }
            Some(v) => v,
            None => DEFAULT_MAX_ABS,
        };
        Ok((limits, max_abs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_flags_keep_the_defaults_and_bad_ones_name_the_flag() {
        let (limits, max_abs) = ServeLimits::default().resolve().unwrap();
        assert_eq!((limits, max_abs), (GrpcLimits::default(), DEFAULT_MAX_ABS));
        let set = ServeLimits {
            max_connections_per_peer: Some(4),
            stream_idle_secs: Some(1.5),
            max_abs_value: Some(100.0),
            ..ServeLimits::default()
        };
        let (limits, max_abs) = set.resolve().unwrap();
        assert_eq!(limits.max_connections_per_peer, 4);
        assert_eq!(limits.stream_idle_timeout, Duration::from_millis(1500));
        assert_eq!(max_abs, 100.0);
        let bad = |l: ServeLimits| l.resolve().unwrap_err().to_string();
        let e = bad(ServeLimits {
            max_streams: Some(0),
            ..ServeLimits::default()
        });
        assert!(e.contains("--max-streams"), "{e}");
        let e = bad(ServeLimits {
            max_rows: Some(0),
            ..ServeLimits::default()
        });
        assert!(e.contains("--max-rows"), "{e}");
        let e = bad(ServeLimits {
            keepalive_secs: Some(0.0),
            ..ServeLimits::default()
        });
        assert!(e.contains("--keepalive-secs"), "{e}");
        let e = bad(ServeLimits {
            peer_rows_per_sec: Some(f64::NAN),
            ..ServeLimits::default()
        });
        assert!(e.contains("--peer-rows-per-sec"), "{e}");
        let e = bad(ServeLimits {
            handshake_timeout_secs: Some(-1.0),
            ..ServeLimits::default()
        });
        assert!(e.contains("--handshake-timeout-secs"), "{e}");
        let e = bad(ServeLimits {
            max_abs_value: Some(f32::INFINITY),
            ..ServeLimits::default()
        });
        assert!(e.contains("--max-abs-value"), "{e}");
        assert_eq!(
            ServeLimits::default().log_budget().unwrap(),
            DEFAULT_LOG_BUDGET
        );
        let budget = |m: f64| {
            ServeLimits {
                log_budget_mib: Some(m),
                ..ServeLimits::default()
            }
            .log_budget()
        };
        assert_eq!(budget(2.0).unwrap(), 2 << 20);
        assert!(
            budget(0.5)
                .unwrap_err()
                .to_string()
                .contains("--log-budget-mib")
        );
    }
}
