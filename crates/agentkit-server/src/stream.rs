//! Server-sent event streams read from a session's event log.
//!
//! Each SSE event carries the log's sequence number as its `id`, so a
//! client that reconnects with `Last-Event-ID` gets exactly what it missed.

use crate::hub::{Hub, Record};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// Which events a stream sends.
#[derive(Clone, Debug)]
pub(crate) enum Filter {
    /// Only run `0`'s, ending after its `RUN_FINISHED` or `RUN_ERROR`.
    Run(String),
    /// Every event, until the client goes away.
    All,
}

struct Reader {
    hub: Arc<Hub>,
    next: u64,
    buffer: VecDeque<Record>,
    watch: tokio::sync::watch::Receiver<u64>,
    filter: Filter,
    done: bool,
}

/// The events after `after`, as an SSE response.
pub(crate) fn sse(
    hub: Arc<Hub>,
    after: u64,
    filter: Filter,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let reader = Reader {
        watch: hub.watch(),
        hub,
        next: after,
        buffer: VecDeque::new(),
        filter,
        done: false,
    };
    let stream = futures::stream::unfold(reader, |mut reader| async move {
        let record = reader.next_record().await?;
        let event = Event::default()
            .id(record.seq.to_string())
            .data(record.event.to_string());
        Some((Ok(event), reader))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

impl Reader {
    async fn next_record(&mut self) -> Option<Record> {
        if self.done {
            return None;
        }
        loop {
            while let Some(record) = self.buffer.pop_front() {
                self.next = record.seq;
                match &self.filter {
                    Filter::All => return Some(record),
                    Filter::Run(run) if *run == record.run_id => {
                        self.done = record.ends_run();
                        return Some(record);
                    }
                    Filter::Run(_) => {}
                }
            }
            self.watch.borrow_and_update();
            let closed = self.hub.is_closed();
            self.buffer.extend(self.hub.after(self.next));
            if self.buffer.is_empty() && (closed || self.watch.changed().await.is_err()) {
                return None;
            }
        }
    }
}
