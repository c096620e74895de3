//! The alarm function's event and answer. One function, two event sources
//! (the data table's stream and the timer queue), told apart by the first
//! record's `eventSource`, as Lambda hands over one source's records per
//! invocation.

use aws_lambda_events::dynamodb::EventRecord;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsMessage};
use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_support::batch::Batch;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The stream's `eventSource`.
pub const STREAM_SOURCE: &str = "aws:dynamodb";
/// The queue's `eventSource`.
pub const QUEUE_SOURCE: &str = "aws:sqs";

/// One invocation's batch, by its source. Any JSON value is one (an event
/// of neither source is [`AlarmEvent::Other`]); each record is read on its
/// own ([`lambda_support::batch`]).
#[derive(Debug, Deserialize)]
#[serde(from = "Value")]
pub enum AlarmEvent {
    /// No records.
    Empty,
    /// The data table's stream records, each read or why not.
    Stream(Vec<Result<EventRecord, serde_json::Error>>),
    /// The timer queue's messages; one that is no SQS message has neither
    /// id nor body (and is reported: no timer).
    Queue(Vec<SqsMessage>),
    /// Records of another source (`eventSource`, or `EventSource` as SNS
    /// spells it; empty when they have neither).
    Other {
        /// The first record's `eventSource` (or `EventSource`), for the log.
        source: String,
    },
}

impl AlarmEvent {
    /// The records' source, for the batch's log line (empty without records).
    pub fn source(&self) -> &str {
        match self {
            AlarmEvent::Empty => "",
            AlarmEvent::Stream(_) => STREAM_SOURCE,
            AlarmEvent::Queue(_) => QUEUE_SOURCE,
            AlarmEvent::Other { source } => source,
        }
    }
}

impl From<Value> for AlarmEvent {
    fn from(event: Value) -> Self {
        let first = event
            .get("Records")
            .and_then(Value::as_array)
            .and_then(|records| records.first());
        let Some(first) = first else {
            return AlarmEvent::Empty;
        };
        let source = first
            .get("eventSource")
            .or_else(|| first.get("EventSource"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        match source {
            STREAM_SOURCE => AlarmEvent::Stream(Batch::from(event).into_records()),
            QUEUE_SOURCE => AlarmEvent::Queue(
                Batch::<SqsMessage>::from(event)
                    .into_records()
                    .into_iter()
                    .map(Result::unwrap_or_default)
                    .collect(),
            ),
            other => AlarmEvent::Other {
                source: other.to_string(),
            },
        }
    }
}

/// Lambda's partial batch response (`{"batchItemFailures":[…]}`), the
/// stream's or the queue's: the same JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum AlarmResponse {
    /// The sequence number the stream is retried from, if any.
    Stream(DynamoDbEventResponse),
    /// The ids of the messages the queue gives again.
    Queue(SqsBatchResponse),
}

impl AlarmResponse {
    /// The stream's answer: the sequence number to retry from, if any.
    pub fn stream(retry_from: Vec<String>) -> Self {
        let mut response = DynamoDbEventResponse::default();
        response.batch_item_failures = retry_from
            .into_iter()
            .map(|sequence| {
                let mut failure = DynamoDbBatchItemFailure::default();
                failure.item_identifier = Some(sequence);
                failure
            })
            .collect();
        AlarmResponse::Stream(response)
    }

    /// The queue's answer: the ids of the messages it gives again.
    pub fn queue(given_again: Vec<String>) -> Self {
        let mut response = SqsBatchResponse::default();
        response.set_failures(given_again);
        AlarmResponse::Queue(response)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(event: Value) -> AlarmEvent {
        serde_json::from_value(event).expect("any JSON value is an alarm event")
    }

    #[test]
    fn the_first_records_source_tells_stream_and_queue_apart() {
        let stream = event(json!({"Records": [
            {"eventSource": "aws:dynamodb", "eventID": "1", "eventName": "INSERT", "awsRegion": "eu-central-1", "dynamodb": {"SequenceNumber": "7", "SizeBytes": 26}},
            {"eventSource": "aws:dynamodb", "dynamodb": "garbage"},
        ]}));
        let AlarmEvent::Stream(records) = &stream else {
            panic!("a stream batch: {stream:?}");
        };
        assert_eq!(records.len(), 2);
        assert!(records[0].is_ok());
        assert!(records[1].is_err(), "a poison record is read on its own");
        assert_eq!(stream.source(), "aws:dynamodb");

        let queue = event(json!({"Records": [
            {"eventSource": "aws:sqs", "messageId": "m1", "body": "{}"},
            {"eventSource": "aws:sqs", "messageId": 5},
        ]}));
        let AlarmEvent::Queue(messages) = &queue else {
            panic!("a queue batch: {queue:?}");
        };
        assert_eq!(messages[0].message_id.as_deref(), Some("m1"));
        assert_eq!(messages[1], SqsMessage::default(), "no SQS message: no id");
        assert_eq!(queue.source(), "aws:sqs");
    }

    #[test]
    fn anything_else_is_empty_or_of_another_source() {
        for empty in [
            json!({}),
            json!({"Records": []}),
            json!({"Records": 1}),
            json!([]),
        ] {
            assert!(matches!(event(empty), AlarmEvent::Empty));
        }
        let sns = event(json!({"Records": [{"EventSource": "aws:sns"}]}));
        assert_eq!(sns.source(), "aws:sns");
        let unnamed = event(json!({"Records": [{"eventSource": 1}]}));
        assert!(matches!(&unnamed, AlarmEvent::Other { source } if source.is_empty()));
    }

    #[test]
    fn both_answers_are_lambdas_partial_batch_shape() {
        let shape = json!({"batchItemFailures": [{"itemIdentifier": "7"}]});
        let stream = AlarmResponse::stream(vec!["7".to_string()]);
        assert_eq!(serde_json::to_value(stream).unwrap(), shape);
        let queue = AlarmResponse::queue(vec!["7".to_string()]);
        assert_eq!(serde_json::to_value(queue).unwrap(), shape);
        let none = AlarmResponse::queue(Vec::new());
        assert_eq!(
            serde_json::to_value(none).unwrap(),
            json!({"batchItemFailures": []})
        );
    }
}
