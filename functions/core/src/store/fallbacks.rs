//! The call types' fallbacks in the log (DECISIONS §7): each one an error
//! line, once per cache refresh, which the stack's metric filter counts and
//! alarms on (infra/lib/alarms.ts, docs/deploy.md).
//!
//! The line: message `call type field fell back`, with `item` (the call
//! type's name), `field`, `found`, `used` and `problem` as fields of the JSON
//! object ([`crate::logging`]).
//!
//! "Once per refresh": a Lambda function reads the call types once per
//! cache lifetime and logs each fallback then. The local server gets them on
//! every request (its store re-reads them whenever they changed, so that an
//! edit shows at once); it logs a
//! fallback the first time it is read and again only after the same period,
//! so a display polling every few seconds does not fill the log. A fallback
//! that changes (another value found) is new and logged at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::domain::call_type_items::Fallback;
use crate::domain::model::CallType;
use crate::store::{Store, StoreError};

pub(crate) struct FallbackLog {
    period: Duration,
    /// When each fallback was last logged; only those within `period`.
    logged: Mutex<HashMap<Fallback, Instant>>,
}

impl FallbackLog {
    /// Logs each fallback at most once per `period` (the cache's lifetime).
    pub(crate) fn new(period: Duration) -> Self {
        FallbackLog {
            period,
            logged: Mutex::new(HashMap::new()),
        }
    }

    /// The call types from `store`, their fallbacks logged.
    pub(crate) async fn read(&self, store: &dyn Store) -> Result<Vec<CallType>, StoreError> {
        let read = store.call_types().await?;
        self.report(&read.fallbacks, Instant::now());
        Ok(read.types)
    }

    /// Logs those of `fallbacks` not logged within the period before `now`.
    fn report(&self, fallbacks: &[Fallback], now: Instant) {
        let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        // Forget what is due again (and what was fixed): the map stays as
        // small as the list of fallbacks.
        logged.retain(|_, at| now.saturating_duration_since(*at) < self.period);
        for fallback in fallbacks {
            if logged.contains_key(fallback) {
                continue;
            }
            tracing::error!(
                item = %fallback.item,
                field = fallback.field,
                found = %fallback.found,
                used = %fallback.used,
                problem = %fallback.problem,
                "call type field fell back"
            );
            logged.insert(fallback.clone(), now);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn fallback(found: &str) -> Fallback {
        Fallback {
            item: "Normalruf".into(),
            field: "priority",
            found: found.into(),
            used: "3".into(),
            problem: "text, not a number".into(),
        }
    }

    /// The JSON lines `f` logs, formatted as [`crate::logging`] does.
    fn lines_logged(f: impl FnOnce()) -> Vec<serde_json::Value> {
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn the_line_is_an_error_with_item_field_found_used_and_problem() {
        let log = FallbackLog::new(Duration::from_secs(60));
        let lines = lines_logged(|| log.report(&[fallback("\"high\"")], Instant::now()));
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        assert_eq!(line["level"], "ERROR");
        assert_eq!(line["message"], "call type field fell back");
        assert_eq!(line["item"], "Normalruf");
        assert_eq!(line["field"], "priority");
        assert_eq!(line["found"], "\"high\"");
        assert_eq!(line["used"], "3");
        assert_eq!(line["problem"], "text, not a number");
    }

    #[test]
    fn a_fallback_is_logged_once_per_period_and_a_changed_one_at_once() {
        let log = FallbackLog::new(Duration::from_secs(60));
        let start = Instant::now();
        let at = |seconds| start + Duration::from_secs(seconds);
        let count = |fallbacks: &[Fallback], seconds| {
            lines_logged(|| log.report(fallbacks, at(seconds))).len()
        };
        assert_eq!(count(&[fallback("\"high\"")], 0), 1);
        assert_eq!(count(&[fallback("\"high\"")], 30), 0);
        assert_eq!(count(&[fallback("\"high\"")], 59), 0);
        // Another value found: logged at once.
        assert_eq!(count(&[fallback("\"low\"")], 59), 1);
        // A period after the first line: due again (the next cache refresh).
        assert_eq!(count(&[fallback("\"high\"")], 60), 1);
        // Fixed, then broken again after a while: logged again.
        assert_eq!(count(&[], 200), 0);
        assert_eq!(count(&[fallback("\"low\"")], 201), 1);
    }
}
