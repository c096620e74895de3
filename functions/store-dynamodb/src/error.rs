//! Which SDK failures are worth a retry by the client (503) and which are ours (500).

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use nurse_call_core::store::StoreError;

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
pub fn build_error(error: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Internal(format!("DynamoDB request could not be built: {error}"))
}
