//! gRPC's message framing on a request stream: each message is a 5-byte prefix (a
//! compressed flag, a 4-byte length) and its bytes. The gate never decodes a message; it
//! finds where each one ends (the first one opens the upstream call), checks its size
//! against --max-message-bytes as gRPC would, unpacked size for a gzipped one, and forwards
//! it as it came: compressed messages, and the grpc-encoding that names their compression,
//! pass through to the server unchanged.

use std::io::Read;

use bytes::{Buf, Bytes, BytesMut};
use h2::RecvStream;

use crate::refusal::{code, Refusal};

/// How a request stream's reading ended, other than with a message.
#[derive(Debug)]
pub enum ReadError {
    /// The client broke gRPC's rules (a message too large, bad compression): end its call
    /// with this status.
    Refused(Refusal),
    /// The client's stream is gone (reset, or the connection closed).
    Gone,
}

/// The compression a call's messages have (grpc-encoding).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Encoding {
    Identity,
    Gzip,
    /// Anything else; a compressed message in it is refused as gRPC-Go refuses it.
    Unknown,
}

impl Encoding {
    pub fn of(header: Option<&str>) -> Encoding {
        match header {
            None | Some("identity") | Some("") => Encoding::Identity,
            Some("gzip") => Encoding::Gzip,
            Some(_) => Encoding::Unknown,
        }
    }
}

/// Finds messages in the bytes of one stream. Pure, so that it can be tested apart.
pub struct Framer {
    buf: BytesMut,
    max: usize,
    encoding: Encoding,
    encoding_name: String,
}

impl Framer {
    pub fn new(max: u32, encoding_name: Option<&str>) -> Framer {
        Framer {
            buf: BytesMut::new(),
            max: max as usize,
            encoding: Encoding::of(encoding_name),
            encoding_name: encoding_name.unwrap_or("").to_string(),
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// Bytes taken in that are not yet a whole message.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The next whole message (prefix included), if it has all arrived.
    pub fn next(&mut self) -> Result<Option<Bytes>, Refusal> {
        if self.buf.len() < 5 {
            return Ok(None);
        }
        let compressed = self.buf[0] & 1 == 1;
        let length = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
        if length > self.max {
            return Err(Refusal::plain(
                code::RESOURCE_EXHAUSTED,
                format!("grpc: received message larger than max ({length} vs. {})", self.max),
            ));
        }
        if self.buf.len() < 5 + length {
            self.buf.reserve(5 + length - self.buf.len());
            return Ok(None);
        }
        let message = self.buf.split_to(5 + length).freeze();
        if self.buf.is_empty() {
            self.buf = BytesMut::new(); // give a large message's buffer back at once
        }
        if compressed {
            self.check_unpacked(&message[5..])?;
        }
        Ok(Some(message))
    }

    /// A compressed message's unpacked size, read up to one byte past the limit and no more.
    fn check_unpacked(&self, packed: &[u8]) -> Result<(), Refusal> {
        match self.encoding {
            Encoding::Identity => {
                Err(Refusal::plain(code::INTERNAL, "grpc: compressed flag set with identity or empty encoding"))
            }
            Encoding::Unknown => Err(Refusal::plain(
                code::UNIMPLEMENTED,
                format!("grpc: Decompressor is not installed for grpc-encoding {:?}", self.encoding_name),
            )),
            Encoding::Gzip => {
                // Every member of a multi-member gzip stream counts, as gRPC's gzip reader reads them all.
                let mut reader = flate2::read::MultiGzDecoder::new(packed).take(self.max as u64 + 1);
                let mut sink = [0u8; 8192];
                let mut total = 0usize;
                loop {
                    match reader.read(&mut sink) {
                        Ok(0) => break,
                        Ok(n) => total += n,
                        Err(e) => {
                            return Err(Refusal::plain(
                                code::INTERNAL,
                                format!("grpc: failed to decompress the received message: {e}"),
                            ))
                        }
                    }
                }
                if total > self.max {
                    return Err(Refusal::plain(
                        code::RESOURCE_EXHAUSTED,
                        format!("grpc: received message after decompression larger than max {}", self.max),
                    ));
                }
                Ok(())
            }
        }
    }
}

/// Reads a client's request stream message by message. Flow control: what arrives is taken
/// in (and its window given back) only while no whole message is waiting to be forwarded,
/// so a stream holds at most one message and one window in the gate.
pub struct Reader {
    stream: RecvStream,
    framer: Framer,
    ended: bool,
}

impl Reader {
    pub fn new(stream: RecvStream, framer: Framer) -> Reader {
        Reader { stream, framer, ended: false }
    }

    /// The next message, or None at the client's half-close.
    pub async fn next(&mut self) -> Result<Option<Bytes>, ReadError> {
        loop {
            if let Some(message) = self.framer.next().map_err(ReadError::Refused)? {
                return Ok(Some(message));
            }
            if self.ended {
                return Ok(None);
            }
            match self.stream.data().await {
                Some(Ok(mut chunk)) => {
                    let n = chunk.len();
                    let _ = self.stream.flow_control().release_capacity(n);
                    while chunk.has_remaining() {
                        let piece = chunk.chunk();
                        let len = piece.len();
                        self.framer.push(piece);
                        chunk.advance(len);
                    }
                }
                Some(Err(_)) => return Err(ReadError::Gone),
                None => {
                    if self.stream.is_end_stream() {
                        self.ended = true;
                        if self.framer.pending() > 0 {
                            return Err(ReadError::Refused(Refusal::plain(
                                code::INTERNAL,
                                "grpc: the client half-closed in the middle of a message",
                            )));
                        }
                    } else {
                        return Err(ReadError::Gone);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn message(flag: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![flag];
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn messages_are_found_whole_however_they_arrive() {
        let mut bytes = message(0, b"hello");
        bytes.extend(message(0, b""));
        bytes.extend(message(0, &[7; 100]));
        let mut framer = Framer::new(100, None);
        let mut found = Vec::new();
        for piece in bytes.chunks(3) {
            framer.push(piece);
            while let Some(m) = framer.next().unwrap() {
                found.push(m);
            }
        }
        assert_eq!(found.len(), 3);
        assert_eq!(&found[0][..], &message(0, b"hello")[..]);
        assert_eq!(found[1].len(), 5);
        assert_eq!(found[2].len(), 105);
        assert_eq!(framer.pending(), 0);
    }

    #[test]
    fn a_message_over_the_limit_is_refused_as_grpc_refuses_it() {
        let mut framer = Framer::new(100, None);
        framer.push(&message(0, &[1; 101])[..5]);
        let refused = framer.next().unwrap_err();
        assert_eq!(refused.code, code::RESOURCE_EXHAUSTED);
        assert_eq!(refused.message, "grpc: received message larger than max (101 vs. 100)");
    }

    #[test]
    fn a_gzipped_message_is_measured_unpacked_and_forwarded_packed() {
        let packed = gzip(&[b'a'; 5000]);
        assert!(packed.len() < 1000);
        let mut framer = Framer::new(1000, Some("gzip"));
        framer.push(&message(1, &packed));
        let refused = framer.next().unwrap_err();
        assert_eq!(refused.code, code::RESOURCE_EXHAUSTED);
        assert_eq!(refused.message, "grpc: received message after decompression larger than max 1000");

        let small = message(1, &gzip(b"squeeze me"));
        let mut framer = Framer::new(1000, Some("gzip"));
        framer.push(&small);
        assert_eq!(&framer.next().unwrap().unwrap()[..], &small[..]);

        let mut framer = Framer::new(1000, None);
        framer.push(&small);
        assert_eq!(framer.next().unwrap_err().code, code::INTERNAL);
        let mut framer = Framer::new(1000, Some("snappy"));
        framer.push(&small);
        assert_eq!(framer.next().unwrap_err().code, code::UNIMPLEMENTED);
        let mut two = gzip(&[b'a'; 800]);
        two.extend(gzip(&[b'a'; 800]));
        let mut framer = Framer::new(1000, Some("gzip"));
        framer.push(&message(1, &two));
        assert_eq!(framer.next().unwrap_err().code, code::RESOURCE_EXHAUSTED, "two members of 800");
        let mut framer = Framer::new(1000, Some("gzip"));
        framer.push(&message(1, b"not gzip"));
        assert_eq!(framer.next().unwrap_err().code, code::INTERNAL);
    }
}
