//! The statuses the gate ends calls with itself. Each ziggurat refusal has the status code,
//! message and `ErrorInfo` reason (domain "ziggurat") of the Python server's guard
//! (server/ziggurat/wire/reasons.py), sent as `grpc-status-details-bin`, so that a client
//! cannot tell which half refused. google.rpc.Status and ErrorInfo are written here as prost
//! structs: the gate decodes no other message, and needs no protoc.

use std::time::Duration;

use base64::Engine;
use http::{HeaderMap, HeaderValue};
use prost::Message;

pub const ERROR_DOMAIN: &str = "ziggurat";

pub const SHUTTING_DOWN: &str = "SERVER_SHUTTING_DOWN";
pub const TOO_MANY_STREAMS: &str = "TOO_MANY_STREAMS";
pub const TOO_MANY_CONNECTIONS: &str = "TOO_MANY_CONNECTIONS";
pub const FIRST_MESSAGE_TIMEOUT: &str = "FIRST_MESSAGE_TIMEOUT";
/// Not a call's status: the log's reason for a connection over
/// --max-open-connections-per-address, closed at accept (the gate's alone; Python never sees
/// connections without calls).
pub const TOO_MANY_OPEN_CONNECTIONS: &str = "TOO_MANY_OPEN_CONNECTIONS";

/// gRPC status codes the gate uses.
pub mod code {
    pub const CANCELLED: u32 = 1;
    pub const DEADLINE_EXCEEDED: u32 = 4;
    pub const RESOURCE_EXHAUSTED: u32 = 8;
    pub const UNIMPLEMENTED: u32 = 12;
    pub const INTERNAL: u32 = 13;
    pub const UNAVAILABLE: u32 = 14;
}

/// google.rpc.Status.
#[derive(Clone, PartialEq, Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<Any>,
}

/// google.protobuf.Any.
#[derive(Clone, PartialEq, Message)]
pub struct Any {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// google.rpc.ErrorInfo.
#[derive(Clone, PartialEq, Message)]
pub struct ErrorInfo {
    #[prost(string, tag = "1")]
    pub reason: String,
    #[prost(string, tag = "2")]
    pub domain: String,
    #[prost(map = "string, string", tag = "3")]
    pub metadata: std::collections::HashMap<String, String>,
}

/// A status the gate ends a call with: with a reason it is a ziggurat refusal, without one
/// a plain gRPC status (as gRPC itself would give).
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub code: u32,
    pub message: String,
    pub reason: Option<&'static str>,
}

impl Refusal {
    pub fn plain(code: u32, message: impl Into<String>) -> Refusal {
        Refusal { code, message: message.into(), reason: None }
    }

    fn ziggurat(code: u32, reason: &'static str, message: String) -> Refusal {
        Refusal { code, message, reason: Some(reason) }
    }

    /// The status as trailers: grpc-status, grpc-message (percent-encoded, as gRPC sends
    /// it) and, for a refusal, grpc-status-details-bin.
    pub fn trailers(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        self.write_to(&mut map);
        map
    }

    pub fn write_to(&self, map: &mut HeaderMap) {
        map.insert("grpc-status", HeaderValue::from(self.code));
        if !self.message.is_empty() {
            let encoded = percent_encode(&self.message);
            map.insert("grpc-message", HeaderValue::from_str(&encoded).expect("percent-encoded is ASCII"));
        }
        if let Some(reason) = self.reason {
            let info = ErrorInfo { reason: reason.into(), domain: ERROR_DOMAIN.into(), metadata: Default::default() };
            let status = Status {
                code: self.code as i32,
                message: self.message.clone(),
                details: vec![Any {
                    type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
                    value: info.encode_to_vec(),
                }],
            };
            let text = base64::engine::general_purpose::STANDARD_NO_PAD.encode(status.encode_to_vec());
            map.insert("grpc-status-details-bin", HeaderValue::from_str(&text).expect("base64 is ASCII"));
        }
    }
}

/// grpc-message's encoding: bytes outside printable ASCII, and '%', as %XX.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// guard.shutting_down_error().
pub fn shutting_down() -> Refusal {
    Refusal::ziggurat(
        code::UNAVAILABLE,
        SHUTTING_DOWN,
        "the server is shutting down; reconnect and resume after it restarts".into(),
    )
}

pub fn too_many_streams(open: u64, most: u64) -> Refusal {
    Refusal::ziggurat(
        code::RESOURCE_EXHAUSTED,
        TOO_MANY_STREAMS,
        format!("this address has {open} calls open, the most the server allows ({most}); close some first"),
    )
}

pub fn too_many_connections(in_use: u64, most: u64) -> Refusal {
    Refusal::ziggurat(
        code::RESOURCE_EXHAUSTED,
        TOO_MANY_CONNECTIONS,
        format!("this address has {in_use} connections in use, the most the server allows ({most}); share a channel"),
    )
}

pub fn first_message_late(timeout: Duration) -> Refusal {
    Refusal::ziggurat(
        code::DEADLINE_EXCEEDED,
        FIRST_MESSAGE_TIMEOUT,
        format!("a stream must send its first message within {} s", python_g(timeout.as_secs_f64())),
    )
}

/// gRPC core's refusal of metadata over its hard limit.
pub fn metadata_too_large(size: usize, most: usize) -> Refusal {
    Refusal::plain(code::RESOURCE_EXHAUSTED, format!("received metadata size exceeds hard limit ({size} vs. {most})"))
}

/// An upstream the gate cannot reach: never the socket's path (the log has it).
pub fn unreachable() -> Refusal {
    Refusal::plain(code::UNAVAILABLE, "the server cannot be reached; retry later")
}

/// Formats like Python's "{:g}" (6 significant digits, no trailing zeros), which the Python
/// guard uses for the same message: 10 -> "10", 0.5 -> "0.5", 1e-05 -> "1e-05".
pub fn python_g(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return if x.is_nan() { "nan".into() } else { "inf".into() };
    }
    let exponent = x.abs().log10().floor() as i32;
    // Round to 6 significant digits first: the exponent may change (999999.5 -> 1e+06).
    let rounded: f64 = format!("{x:.5e}").parse().unwrap_or(x);
    let exponent = if rounded != 0.0 { rounded.abs().log10().floor() as i32 } else { exponent };
    if (-4..6).contains(&exponent) {
        let decimals = (5 - exponent).max(0) as usize;
        let text = format!("{rounded:.decimals$}");
        let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text };
        text
    } else {
        let text = format!("{rounded:.5e}");
        let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa =
            if mantissa.contains('.') { mantissa.trim_end_matches('0').trim_end_matches('.') } else { mantissa };
        let exp: i32 = exp.parse().unwrap_or(0);
        format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_g_matches_pythons_format() {
        for (x, want) in [
            (10.0, "10"),
            (0.5, "0.5"),
            (0.25, "0.25"),
            (1e-05, "1e-05"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (1e9, "1e+09"),
            (0.0001, "0.0001"),
            (2.5e-7, "2.5e-07"),
            (3600.0, "3600"),
            (0.1 + 0.2, "0.3"),
        ] {
            assert_eq!(python_g(x), want, "{x}");
        }
    }

    #[test]
    fn a_refusal_carries_its_reason_as_error_info() {
        let trailers = shutting_down().trailers();
        assert_eq!(trailers["grpc-status"], "14");
        assert_eq!(trailers["grpc-message"], "the server is shutting down; reconnect and resume after it restarts");
        let raw = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(trailers["grpc-status-details-bin"].as_bytes())
            .unwrap();
        let status = Status::decode(raw.as_slice()).unwrap();
        assert_eq!(status.code, 14);
        assert_eq!(status.details.len(), 1);
        assert_eq!(status.details[0].type_url, "type.googleapis.com/google.rpc.ErrorInfo");
        let info = ErrorInfo::decode(status.details[0].value.as_slice()).unwrap();
        assert_eq!((info.reason.as_str(), info.domain.as_str()), ("SERVER_SHUTTING_DOWN", "ziggurat"));
    }

    #[test]
    fn plain_statuses_have_no_details_and_messages_are_percent_encoded() {
        let trailers = Refusal::plain(code::INTERNAL, "100% ü\n").trailers();
        assert_eq!(trailers["grpc-message"], "100%25 %C3%BC%0A");
        assert!(!trailers.contains_key("grpc-status-details-bin"));
        assert_eq!(
            first_message_late(Duration::from_millis(500)).message,
            "a stream must send its first message within 0.5 s"
        );
        assert_eq!(
            metadata_too_large(20000, 16384).message,
            "received metadata size exceeds hard limit (20000 vs. 16384)"
        );
    }
}
