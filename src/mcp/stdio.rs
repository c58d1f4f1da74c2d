//! The guarded stdio transport: stdin read line by line with a size limit (a longer line is
//! answered with a JSON-RPC error instead of growing memory without bound), stdout written by
//! one task so replies never interleave.

use serde::Deserializer;

/// The longest request line the server reads, in bytes, its newline excluded: 4 MiB.
///
/// A real MCP request is small: a tool call carries a sentence or a paragraph, and a client
/// that sends a whole file as a memory still stays far below this. Without a limit a runaway or
/// hostile client could make the server hold a line of any length (a 400 MB line took 827 MB and
/// never got a reply); with it, memory stays bounded by the limit whatever arrives. A longer line
/// is read to its end without being kept and answered with the error [`too_large`] builds; the
/// server then reads on. (rmcp's own transport drops lines over 16 MiB silently; this limit is
/// below it, so that never happens.) docs/mcp.md documents the limit.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// How many requests may wait for their answer at once. A client that sends on while it reads
/// nothing would otherwise make the server queue answers without bound (1.26 GB after ~200,000
/// requests): once this many are unanswered, the guard stops reading stdin until answers drain.
pub const MAX_IN_FLIGHT: usize = 64;

/// How many of the guard's own error lines may wait for stdout.
const MAX_QUEUED_ERRORS: usize = 64;

/// How much of stdin is read at a time.
const READ_CHUNK: usize = 64 << 10;

/// What [`read_line`] found.
#[derive(Debug, PartialEq)]
pub(super) enum Line {
    /// A line within the limit, now in the buffer without its newline.
    Whole,
    /// A line of `size` bytes (newline excluded), over the limit: the buffer holds its first
    /// [`MAX_LINE_BYTES`] bytes, the rest was dropped as it was read.
    TooLong { size: u64 },
    /// The end of the input.
    End,
}

/// Reads the next line into `line`, never holding more than [`MAX_LINE_BYTES`] of it: the
/// rest of a longer line is read and dropped chunk by chunk. A last line without a newline
/// counts as a line.
pub(super) async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Line> {
    use tokio::io::AsyncBufReadExt;
    line.clear();
    let mut size = 0u64;
    let finished = |size: u64| if size > MAX_LINE_BYTES as u64 { Line::TooLong { size } } else { Line::Whole };
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if size == 0 { Line::End } else { finished(size) });
        }
        let newline = memchr::memchr(b'\n', available);
        let part = &available[..newline.unwrap_or(available.len())];
        let keep = MAX_LINE_BYTES.saturating_sub(line.len()).min(part.len());
        line.extend_from_slice(&part[..keep]);
        size += part.len() as u64;
        let used = part.len() + usize::from(newline.is_some());
        reader.consume(used);
        if newline.is_some() {
            return Ok(finished(size));
        }
    }
}

/// Returns the JSON-RPC error for a line of `size` bytes, over the limit: Invalid Request
/// (-32600), since the line was never parsed and so cannot be called invalid JSON. Its id is
/// the request's when `head` (the line's start) shows it, else null; `data` gives the line's
/// size and the limit.
pub(super) fn too_large(size: u64, head: &[u8]) -> String {
    let message = format!(
        "Request too large: a line of {size} bytes, over the limit of {MAX_LINE_BYTES} bytes (4 MiB) per message; \
         the line was discarded"
    );
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": leading_id(head),
        "error": {"code": -32600, "message": message, "data": {"size": size, "limit": MAX_LINE_BYTES}}
    })
    .to_string()
}

/// Returns the top-level `"id"` of the JSON-RPC message that starts with `head`, when it comes
/// before the end of `head` and is a string or a number (as JSON-RPC ids are); else null. The
/// members before it are skipped by serde_json, strings and nesting included, so an `"id"` in
/// the params is never taken for the request's.
pub(super) fn leading_id(head: &[u8]) -> serde_json::Value {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    use serde_json::Value;
    struct Find<'a>(&'a mut Value);
    impl<'de> DeserializeSeed<'de> for Find<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Find<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON-RPC message")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    let id: Value = map.next_value()?;
                    if id.is_string() || id.is_number() {
                        *self.0 = id;
                    }
                    // Found: the rest of the message (cut short anyway) does not matter.
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut id = Value::Null;
    // The head is cut short, so the parse ends in an error; what it found before that stands.
    let _ = Find(&mut id).deserialize(&mut serde_json::Deserializer::from_slice(head));
    id
}

/// Returns the Invalid Request error (-32600) for `message`, JSON that is not a JSON-RPC 2.0
/// message (`None` for one that is): not an object, no `"jsonrpc":"2.0"`, or neither a method
/// nor a response. JSON-RPC 2.0 wants an `id` member on every error: the message's own id when
/// it has a usable one, else null (the SDK's own answer to such a line has no `id` at all).
pub(super) fn invalid_request(message: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let object = message.as_object();
    let id = object.and_then(|m| m.get("id")).filter(|id| id.is_string() || id.is_number()).cloned();
    let why = match object {
        None if message.is_array() => "a batch (a JSON array) is not taken: send one message per line",
        None => "a JSON-RPC message is a JSON object",
        Some(m) if m.get("jsonrpc") != Some(&Value::from("2.0")) => "the message needs \"jsonrpc\": \"2.0\"",
        Some(m) if m.get("method").is_some_and(Value::is_string) => return None,
        Some(m) if (m.contains_key("result") || m.contains_key("error")) && id.is_some() => return None,
        Some(m) if m.contains_key("method") => "\"method\" must be a string",
        Some(_) => "the message has no \"method\" (nor a response's \"id\" and \"result\" or \"error\")",
    };
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": -32600, "message": format!("Invalid Request: {why}")}
    });
    Some(error.to_string())
}

/// What a client's message does to the count of unanswered requests.
#[derive(Debug, PartialEq)]
pub(super) enum InFlight {
    Request,
    Cancelled,
    Neither,
}

/// Returns whether `message` is a request (a method and an id: an answer will come), the
/// cancellation of one, or neither (a notification, a response).
pub(super) fn in_flight_change(message: &serde_json::Value) -> InFlight {
    let method = message.get("method").and_then(serde_json::Value::as_str);
    let id = message.get("id").is_some_and(|id| !id.is_null());
    match method {
        Some("notifications/cancelled") => InFlight::Cancelled,
        Some(_) if id => InFlight::Request,
        _ => InFlight::Neither,
    }
}

/// Returns whether `line`, a message of the server, answers a request (a result or an error
/// with an id), as the SDK writes one: `{"jsonrpc":"2.0","id":…,"result"|"error":…}`.
pub(super) fn is_response(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(br#"{"jsonrpc":"2.0","id":"#.as_slice()) else { return false };
    // After the id (a number or a string without a quote inside, as kb's clients send): the key.
    let key_at = memchr::memmem::find(rest, br#","result":"#).or_else(|| memchr::memmem::find(rest, br#","error":"#));
    let method_at = memchr::memmem::find(rest, br#","method":"#);
    match (key_at, method_at) {
        (Some(k), Some(m)) => k < m,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Returns `line`, a reply of the SDK, with `"id": null` added when it is an error without an
/// `id` member (JSON-RPC 2.0 requires one; the guard answers the cases it knows first).
pub(super) fn with_error_id(line: Vec<u8>) -> Vec<u8> {
    const HEAD: &[u8] = br#"{"jsonrpc":"2.0","error":"#;
    match line.strip_prefix(br#"{"jsonrpc":"2.0","#.as_slice()) {
        Some(rest) if line.starts_with(HEAD) => [br#"{"jsonrpc":"2.0","id":null,"#.as_slice(), rest].concat(),
        _ => line,
    }
}

/// Returns the stdio transport with a guard in front of it. The guard reads stdin a line at a
/// time, holding at most [`MAX_LINE_BYTES`] of a line: a longer line gets the Invalid Request
/// error of [`too_large`] and never reaches the SDK. A line that is not JSON gets the JSON-RPC
/// parse error (-32700, `id: null`) the protocol asks for, instead of silence. Every other line
/// passes through; all output goes through one writer, so replies and errors never interleave
/// mid-line.
pub(super) fn guarded_stdio() -> ((tokio::io::DuplexStream, tokio::io::DuplexStream), tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (server_in, mut feed) = tokio::io::duplex(1 << 16);
    let (server_out, replies) = tokio::io::duplex(1 << 16);
    // Bounded both ways: a full queue stops the reading of requests, never grows memory.
    let (errors_tx, mut errors_rx) = tokio::sync::mpsc::channel::<String>(MAX_QUEUED_ERRORS);
    let in_flight = std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let answered = in_flight.clone();
    tokio::spawn(async move {
        let mut stdin = BufReader::with_capacity(READ_CHUNK, tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            match read_line(&mut stdin, &mut line).await {
                Ok(Line::Whole) => {}
                Ok(Line::TooLong { size }) => {
                    let _ = errors_tx.send(too_large(size, &line)).await;
                    continue;
                }
                Ok(Line::End) | Err(_) => break,
            }
            let text = String::from_utf8_lossy(&line);
            if text.trim().is_empty() {
                continue;
            }
            let message = match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(message) => message,
                Err(_) => {
                    let error = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": null,
                        "error": {"code": -32700, "message": "Parse error: the line is not JSON"}
                    });
                    let _ = errors_tx.send(error.to_string()).await;
                    continue;
                }
            };
            if let Some(error) = invalid_request(&message) {
                let _ = errors_tx.send(error).await;
                continue;
            }
            match in_flight_change(&message) {
                // A request waits for a free place: its answer is sure to come (or be cancelled).
                InFlight::Request => match in_flight.acquire().await {
                    Ok(permit) => permit.forget(),
                    Err(_) => break,
                },
                // A cancelled request may get no answer: its place is given back.
                InFlight::Cancelled if in_flight.available_permits() < MAX_IN_FLIGHT => in_flight.add_permits(1),
                _ => {}
            }
            if feed.write_all(&line).await.is_err() || feed.write_all(b"\n").await.is_err() {
                break;
            }
        }
        // End of input: closing the feed ends the session.
        let _ = feed.shutdown().await;
    });
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut replies = BufReader::new(replies).split(b'\n');
        loop {
            let line = tokio::select! {
                r = replies.next_segment() => match r {
                    Ok(Some(l)) => {
                        if is_response(&l) && answered.available_permits() < MAX_IN_FLIGHT {
                            answered.add_permits(1);
                        }
                        with_error_id(l)
                    }
                    _ => break,
                },
                Some(e) = errors_rx.recv() => e.into_bytes(),
            };
            if stdout.write_all(&line).await.is_err() || stdout.write_all(b"\n").await.is_err() {
                break;
            }
            let _ = stdout.flush().await;
        }
    });
    ((server_in, server_out), writer)
}
