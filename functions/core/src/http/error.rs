//! Every error the API answers with (spec 7, DECISIONS §3), and its body.

use serde::Serialize;

use crate::request::validation::FieldErrors;
use crate::signing::signature::HashDebug;
use crate::wire::StaffRecord;

/// Why a request failed, as the API answers it: a status, a `code` and a
/// German message ([`ApiError::body`]). Handlers return it; the router
/// turns it into the response.
#[derive(Debug)]
pub enum ApiError {
    /// 422, `messages` an object of field errors.
    Validation(FieldErrors),
    /// 400 `invalid_hash`; `debug` only in sandbox mode for a known consumer.
    InvalidHash(Option<HashDebug>),
    /// 400 `malformed_request`, with a German explanation.
    Malformed(String),
    /// 400 `signed_time_required`: a valid hash, but the consumer requires a
    /// signed `signed_at` (replay protection) and the request has none.
    SignedTimeRequired,
    /// 400 `signed_time_out_of_range`: a valid hash over a `signed_at` that
    /// is more than [`crate::signing::replay::WINDOW_SECONDS`] off the server's clock.
    SignedTimeOutOfRange,
    /// 401 `unauthorized`: a display read without a valid display token
    /// (missing, unknown or revoked; DECISIONS §11).
    Unauthorized,
    /// 403 `not_responsible`: a response from a person neither alerted for
    /// the call nor on duty for its section (DECISIONS §20).
    NotResponsible,
    /// 404 `not_found`.
    NotFound,
    /// 405 `method_not_allowed`; the allowed methods for the `Allow` header.
    MethodNotAllowed(&'static str),
    /// 409 `already_accepted`: somebody else accepted the call first
    /// (DECISIONS §14); the body names them in `accepted_by`.
    AlreadyAccepted(StaffRecord),
    /// 409 `call_closed`: a response to a call that is closed.
    CallClosed,
    /// 413 `payload_too_large`.
    PayloadTooLarge,
    /// 415 `unsupported_media_type`.
    UnsupportedMediaType,
    /// 429 `too_many_requests`: over the client's rate of requests that no
    /// secret or token authenticates (DECISIONS §20); `Retry-After` the
    /// seconds until the next is taken.
    TooManyRequests(u64),
    /// 503 `service_unavailable`, with `Retry-After`.
    ServiceUnavailable,
    /// 500 `internal_error`; the detail is logged, never sent.
    Internal,
}

/// Seconds a client is asked to wait after a 503.
pub(crate) const RETRY_AFTER_SECONDS: u32 = 1;

impl ApiError {
    /// The HTTP status it is answered with.
    pub fn status(&self) -> u16 {
        match self {
            ApiError::Validation(_) => 422,
            ApiError::InvalidHash(_)
            | ApiError::Malformed(_)
            | ApiError::SignedTimeRequired
            | ApiError::SignedTimeOutOfRange => 400,
            ApiError::Unauthorized => 401,
            ApiError::NotResponsible => 403,
            ApiError::NotFound => 404,
            ApiError::MethodNotAllowed(_) => 405,
            ApiError::AlreadyAccepted(_) | ApiError::CallClosed => 409,
            ApiError::PayloadTooLarge => 413,
            ApiError::UnsupportedMediaType => 415,
            ApiError::TooManyRequests(_) => 429,
            ApiError::ServiceUnavailable => 503,
            ApiError::Internal => 500,
        }
    }

    /// The machine-readable code of the error.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Validation(_) => "validation_failed",
            ApiError::InvalidHash(_) => "invalid_hash",
            ApiError::Malformed(_) => "malformed_request",
            ApiError::SignedTimeRequired => "signed_time_required",
            ApiError::SignedTimeOutOfRange => "signed_time_out_of_range",
            ApiError::Unauthorized => "unauthorized",
            ApiError::NotResponsible => "not_responsible",
            ApiError::NotFound => "not_found",
            ApiError::MethodNotAllowed(_) => "method_not_allowed",
            ApiError::AlreadyAccepted(_) => "already_accepted",
            ApiError::CallClosed => "call_closed",
            ApiError::PayloadTooLarge => "payload_too_large",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::TooManyRequests(_) => "too_many_requests",
            ApiError::ServiceUnavailable => "service_unavailable",
            ApiError::Internal => "internal_error",
        }
    }

    fn text(&self) -> String {
        match self {
            ApiError::Validation(_) => "Die Daten sind ungültig.".into(),
            ApiError::InvalidHash(_) => "Ungültiger Hash.".into(),
            ApiError::Malformed(reason) => reason.clone(),
            ApiError::SignedTimeRequired => {
                "Dieser Consumer muss signed_at senden und mitsignieren.".into()
            }
            ApiError::SignedTimeOutOfRange => format!(
                "signed_at weicht mehr als {} Sekunden von der Serverzeit ab.",
                crate::signing::replay::WINDOW_SECONDS
            ),
            ApiError::Unauthorized => "Anmeldung erforderlich.".into(),
            ApiError::NotResponsible => "Diese Person ist für diesen Ruf nicht zuständig.".into(),
            ApiError::NotFound => "Die angeforderte Ressource wurde nicht gefunden.".into(),
            ApiError::MethodNotAllowed(allow) => {
                format!("Die Methode ist für diese Ressource nicht erlaubt. Erlaubt: {allow}.")
            }
            ApiError::AlreadyAccepted(by) => {
                format!("Der Ruf wurde bereits von {} angenommen.", by.name)
            }
            ApiError::CallClosed => "Der Ruf ist bereits beendet.".into(),
            ApiError::PayloadTooLarge => "Der Anfragekörper ist größer als 256 KiB.".into(),
            ApiError::UnsupportedMediaType => "Der Content-Type muss application/json sein.".into(),
            ApiError::TooManyRequests(_) => "Zu viele Anfragen.".into(),
            ApiError::ServiceUnavailable => {
                "Der Dienst ist vorübergehend nicht verfügbar. Bitte später erneut versuchen."
                    .into()
            }
            ApiError::Internal => "Interner Fehler.".into(),
        }
    }

    /// The JSON body of the error. Built from structs, not `json!`, so that
    /// keys keep their documented order (`success` first, field errors as found).
    pub fn body(&self) -> String {
        #[derive(Serialize)]
        struct ValidationBody<'a> {
            success: bool,
            messages: ValidationMessages<'a>,
        }
        #[derive(Serialize)]
        struct ValidationMessages<'a> {
            code: &'static str,
            status_code: u16,
            errors: &'a FieldErrors,
        }
        #[derive(Serialize)]
        struct ErrorBody<'a> {
            success: bool,
            messages: [Message; 1],
            #[serde(skip_serializing_if = "Option::is_none")]
            debug: Option<DebugBody<'a>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            accepted_by: Option<&'a StaffRecord>,
        }
        #[derive(Serialize)]
        struct Message {
            code: &'static str,
            status_code: u16,
            errors: String,
        }
        #[derive(Serialize)]
        struct DebugBody<'a> {
            secret: &'a str,
            string: &'a str,
            hash: DebugHash<'a>,
        }
        #[derive(Serialize)]
        struct DebugHash<'a> {
            expected: &'a str,
            provided: &'a str,
        }

        let body = match self {
            ApiError::Validation(errors) => serde_json::to_string(&ValidationBody {
                success: false,
                messages: ValidationMessages {
                    code: self.code(),
                    status_code: self.status(),
                    errors,
                },
            }),
            _ => serde_json::to_string(&ErrorBody {
                success: false,
                messages: [Message {
                    code: self.code(),
                    status_code: self.status(),
                    errors: self.text(),
                }],
                debug: match self {
                    ApiError::InvalidHash(Some(debug)) => Some(DebugBody {
                        secret: &debug.secret,
                        string: &debug.string,
                        hash: DebugHash {
                            expected: &debug.expected,
                            provided: &debug.provided,
                        },
                    }),
                    _ => None,
                },
                accepted_by: match self {
                    ApiError::AlreadyAccepted(by) => Some(by),
                    _ => None,
                },
            }),
        };
        body.expect("error bodies always serialise")
    }
}

impl From<crate::signing::replay::Refusal> for ApiError {
    fn from(refusal: crate::signing::replay::Refusal) -> Self {
        match refusal {
            crate::signing::replay::Refusal::Required => ApiError::SignedTimeRequired,
            crate::signing::replay::Refusal::OutOfRange => ApiError::SignedTimeOutOfRange,
        }
    }
}

impl From<FieldErrors> for ApiError {
    fn from(errors: FieldErrors) -> Self {
        ApiError::Validation(errors)
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(error: crate::store::StoreError) -> Self {
        match error {
            crate::store::StoreError::Unavailable(detail) => {
                tracing::warn!(error = %detail, "store unavailable");
                ApiError::ServiceUnavailable
            }
            crate::store::StoreError::Internal(detail) => {
                tracing::error!(error = %detail, "store failure");
                ApiError::Internal
            }
            crate::store::StoreError::Contended(detail) => {
                tracing::warn!(error = %detail, "contention");
                ApiError::ServiceUnavailable
            }
        }
    }
}
