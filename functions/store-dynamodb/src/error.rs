//! Which SDK failures are worth a retry by the client (503) and which are ours (500).

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use nurse_call_core::StoreError;

/// Error codes that mean "too busy or briefly unavailable" after the SDK's own retries.
const TRANSIENT_CODES: [&str; 7] = [
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionConflictException",
    "TransactionInProgressException",
];

/// What a failed SDK call means for the caller: [`StoreError::Unavailable`]
/// (503, worth a retry) when DynamoDB was busy, unreachable or too slow after
/// the SDK's own retries, else [`StoreError::Internal`] (500, ours).
pub fn classify<E>(error: SdkError<E, HttpResponse>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let detail = aws_sdk_dynamodb::error::DisplayErrorContext(&error).to_string();
    match &error {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => StoreError::Unavailable(detail),
        SdkError::ServiceError(service) => match service.err().code() {
            Some(code) if TRANSIENT_CODES.contains(&code) => StoreError::Unavailable(detail),
            // A 5xx without a known code (a proxy, a load balancer): transient too.
            _ if service.raw().status().is_server_error() => StoreError::Unavailable(detail),
            _ => StoreError::Internal(detail),
        },
        SdkError::ResponseError(_) => StoreError::Unavailable(detail),
        _ => StoreError::Internal(detail),
    }
}

/// A request that could not even be built (a bug of ours).
pub(crate) fn build_error(error: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Internal(format!("DynamoDB request could not be built: {error}"))
}

/// Whether an SDK error is a failed condition (the item was not as expected).
macro_rules! condition_failed {
    ($error:expr) => {
        $error
            .as_service_error()
            .is_some_and(|e| e.is_conditional_check_failed_exception())
    };
}

/// The answer of a write conditioned on `attribute_exists(…)`: whether the
/// item was there (and so written), or the store's failure. A macro because
/// each operation has its own error type, each with its own
/// `is_conditional_check_failed_exception`.
macro_rules! existed {
    ($result:expr) => {
        match $result {
            Ok(_) => Ok(true),
            Err(error) if $crate::error::condition_failed!(error) => Ok(false),
            Err(error) => Err($crate::error::classify(error)),
        }
    };
}

pub(crate) use {condition_failed, existed};
