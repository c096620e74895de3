//! The records of a Lambda batch event (`{"Records":[…]}`, a DynamoDB
//! stream's or an SQS queue's), each read on its own.
//!
//! Why not the whole event as one type (`aws_lambda_events`'
//! `DynamoDbEvent`, `SqsEvent`): one record that is not what it should be
//! (a poison record) would fail the runtime's reading of the whole event,
//! and the invocation with it: Lambda would retry the batch until the
//! record expires, holding up the shard or the queue behind it. Read on its
//! own, such a record is the handler's to skip or to report, and the rest
//! of the batch is handled. Nor does an event without a `Records` array
//! fail: it has no records ([`Batch::records`] is `None`), which the
//! handler logs.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The records of a batch event, each an `R` or why it is none.
///
/// Any JSON value is a `Batch` (read through [`Value`], as the runtime read
/// the event before): the runtime never fails an invocation for its shape.
#[derive(Debug, Deserialize)]
#[serde(from = "Value", bound(deserialize = "R: DeserializeOwned"))]
pub struct Batch<R> {
    /// The event's `Records`, in order; `None` when it has no such array.
    pub records: Option<Vec<Result<R, serde_json::Error>>>,
}

impl<R> Batch<R> {
    /// The records (none when the event has no `Records` array).
    pub fn into_records(self) -> Vec<Result<R, serde_json::Error>> {
        self.records.unwrap_or_default()
    }

    /// How many records the event has (unreadable ones included).
    pub fn len(&self) -> usize {
        self.records.as_ref().map_or(0, Vec::len)
    }

    /// Whether the event has no records at all (readable or not).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<R: DeserializeOwned> From<Value> for Batch<R> {
    fn from(mut event: Value) -> Self {
        let records = event
            .get_mut("Records")
            .and_then(Value::as_array_mut)
            .map(|records| records.drain(..).map(R::deserialize).collect());
        Batch { records }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Record {
        id: u32,
    }

    fn batch(event: Value) -> Batch<Record> {
        serde_json::from_value(event).expect("any JSON value is a batch")
    }

    #[test]
    fn each_record_is_read_on_its_own() {
        let records =
            batch(json!({"Records": [{"id": 1}, {"id": "two"}, {"id": 3}]})).into_records();
        assert_eq!(records.len(), 3);
        assert_eq!(records[0].as_ref().ok(), Some(&Record { id: 1 }));
        assert!(records[1].is_err(), "a poison record is one record's error");
        assert_eq!(records[2].as_ref().ok(), Some(&Record { id: 3 }));
    }

    #[test]
    fn an_event_without_a_records_array_has_none() {
        for event in [
            json!({}),
            json!({"Records": {"id": 1}}),
            json!("Records"),
            json!(null),
        ] {
            let batch = batch(event);
            assert!(batch.records.is_none());
            assert!(batch.is_empty());
        }
        assert_eq!(
            batch(json!({"Records": []})).records.map(|r| r.len()),
            Some(0)
        );
    }
}
