//! A staff member's phones for Web Push (DECISIONS §15):
//! `GET /api/v1/staff/push-key` (the installation's VAPID public key, the
//! `applicationServerKey` a browser subscribes with), `POST
//! /api/v1/staff/push-subscriptions` (the browser's `PushSubscription`
//! JSON; a new one gets the sign-on test, DECISIONS §18) and `DELETE` of
//! the same path (`{"endpoint": …}`). The staff
//! bearer token authenticates all three, as every staff request; no log
//! line names a token or a subscription's keys.

use http::Method;
use serde::Serialize;
use serde_json::Value;

use crate::app::AppState;
use crate::clock;
use crate::domain::alarm::receipt::device_tag;
use crate::domain::push::{MAX_SUBSCRIPTIONS_PER_STAFF, PushSubscription, check_subscription};
use crate::domain::push_services::PushServices;
use crate::domain::wire_time::format_local;
use crate::http::auth;
use crate::http::error::ApiError;
use crate::http::io::{ApiRequest, ApiResponse, json_response};
use crate::request::validation::{FieldErrors, message};
use crate::store::push::Registration;
use crate::wire::success;

#[derive(Debug, Serialize)]
struct PushKeyRecord<'a> {
    /// base64url of the uncompressed P-256 point.
    public_key: &'a str,
}

/// `GET /api/v1/staff/push-key`. The push sender makes the key pair at its
/// start (the local server; in AWS the `deliver` function's first cold
/// start); until it has, there is none, and the answer is 404: the page
/// then says that this server sends no notifications, rather than have a
/// phone subscribe for pushes that would never come.
pub(crate) async fn push_key(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    auth::staff(state, request).await?;
    let store = state.push.as_ref().ok_or(ApiError::Internal)?;
    let keys = store.vapid_keys().await?.ok_or(ApiError::NotFound)?;
    Ok(json_response(
        200,
        success(&PushKeyRecord {
            public_key: &keys.public_key,
        }),
    ))
}

#[derive(Debug, Serialize)]
struct SubscriptionRecord<'a> {
    /// The device's id, as `GET /api/v1/staff/me`'s `devices` name it
    /// (§18): the page keeps it to know which device is itself.
    id: String,
    endpoint: &'a str,
    created_at: String,
}

/// `POST` (register this browser) or `DELETE` (unregister it)
/// `/api/v1/staff/push-subscriptions`.
pub(crate) async fn subscriptions(
    state: &AppState,
    request: &ApiRequest,
) -> Result<ApiResponse, ApiError> {
    let staff = auth::staff(state, request).await?;
    let store = state.push.as_ref().ok_or(ApiError::Internal)?;
    let envelope = super::envelope(request)?;
    if request.method() == Method::DELETE {
        let endpoint = endpoint_of(envelope.get("endpoint"))?;
        let removed = store.delete_push_subscription(&staff.id, &endpoint).await?;
        tracing::info!(staff_id = %staff.id, removed, "push subscription removed");
        return Ok(json_response(
            200,
            success(&serde_json::json!({ "removed": removed })),
        ));
    }
    let (endpoint, p256dh, auth) = fields(
        envelope.get("endpoint"),
        envelope.get("keys"),
        envelope.get("expirationTime"),
        &state.settings.staff.push_services,
    )?;
    let subscription = PushSubscription {
        staff_id: staff.id.clone(),
        scope: staff.scope.clone(),
        endpoint,
        p256dh,
        auth,
        created_at: clock::now(),
    };
    // Counted in the write (DECISIONS §20): requests at once never store
    // more than the cap; the same endpoint again is no new device.
    let registration = store
        .register_push_subscription(&subscription, MAX_SUBSCRIPTIONS_PER_STAFF)
        .await?;
    if registration == Registration::Full {
        let mut errors = FieldErrors::new();
        errors.add(
            "endpoint",
            format!(
                "Es sind höchstens {MAX_SUBSCRIPTIONS_PER_STAFF} Geräte je Person möglich; bitte ein altes abmelden."
            ),
        );
        return Err(errors.into());
    }
    let renewed = registration == Registration::Renewed;
    tracing::info!(
        staff_id = %staff.id,
        push_service = host_of(&subscription.endpoint),
        renewed,
        "push subscription registered"
    );
    // A new phone gets the sign-on test at once (§18); the answer does not
    // wait for its receipt, and a failure is the test's, not the
    // registration's.
    if !renewed
        && let Err(error) = state
            .test_devices(&staff, Some(&subscription.endpoint))
            .await
    {
        tracing::warn!(staff_id = %staff.id, %error, "sign-on test of a new device not sent");
    }
    Ok(json_response(
        201,
        success(&SubscriptionRecord {
            id: device_tag(&subscription.endpoint),
            endpoint: &subscription.endpoint,
            created_at: format_local(subscription.created_at, state.settings.time_zone),
        }),
    ))
}

/// The endpoint's host, for logs: the path is the subscription's secret
/// capability at the push service.
pub fn host_of(endpoint: &str) -> String {
    url::Url::parse(endpoint)
        .ok()
        .and_then(|url| url.host_str().map(str::to_string))
        .unwrap_or_default()
}

fn endpoint_of(value: Option<&Value>) -> Result<String, ApiError> {
    let mut errors = FieldErrors::new();
    match value {
        Some(Value::String(endpoint)) if !endpoint.trim().is_empty() => Ok(endpoint.clone()),
        None | Some(Value::Null) | Some(Value::String(_)) => {
            errors.add("endpoint", message::required("endpoint"));
            Err(errors.into())
        }
        Some(_) => {
            errors.add("endpoint", message::string("endpoint"));
            Err(errors.into())
        }
    }
}

/// `endpoint` (a URL of one of the `services`, DECISIONS §20),
/// `keys.p256dh` and `keys.auth`, every field's error at once;
/// `expirationTime`, which browsers send as `null` or epoch milliseconds,
/// is checked and not kept (a push service's 404/410 says when it ended).
fn fields(
    endpoint: Option<&Value>,
    keys: Option<&Value>,
    expiration: Option<&Value>,
    services: &PushServices,
) -> Result<(String, String, String), ApiError> {
    let mut errors = FieldErrors::new();
    match expiration {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_f64().is_some_and(|n| n >= 0.0) => {}
        Some(_) => errors.add("expirationTime", message::number("expirationTime")),
    }
    let endpoint = match endpoint_of(endpoint) {
        Ok(endpoint) => Some(endpoint),
        Err(ApiError::Validation(fields)) => {
            errors.extend(fields);
            None
        }
        Err(other) => return Err(other),
    };
    let mut key = |name: &str| {
        let path = format!("keys.{name}");
        match keys.and_then(|keys| keys.get(name)) {
            Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                errors.add(&path, message::required(&path));
                None
            }
            Some(_) => {
                errors.add(&path, message::string(&path));
                None
            }
        }
    };
    let (p256dh, auth) = (key("p256dh"), key("auth"));
    if let Some(keys) = keys
        && !keys.is_object()
    {
        errors.add("keys", message::object("keys"));
    }
    let (Some(endpoint), Some(p256dh), Some(auth)) = (endpoint, p256dh, auth) else {
        return Err(errors.into());
    };
    if let Err(faults) = check_subscription(&endpoint, &p256dh, &auth, services) {
        for fault in faults {
            errors.add(fault.key, fault.message);
        }
    }
    Ok(errors.into_result((endpoint, p256dh, auth))?)
}
