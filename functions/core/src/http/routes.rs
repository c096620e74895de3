//! Which handler serves which endpoint: one [`Route`] per endpoint, a
//! constant each, and [`ALL`] of them for the local server.
//!
//! Why constants and not one `match` over [`Endpoint`]: a Lambda function
//! serves a few endpoints, and a match on an endpoint known only at run
//! time links every handler into every function (with the pages' HTML,
//! scripts and icons and the interface document). A function's `main`
//! names its routes, so the linker keeps only their handlers; that keeps
//! each arm64 zip within `scripts/build-lambdas`' budget.

use std::future::Future;
use std::pin::Pin;

use crate::app::AppState;
use crate::http::endpoint::Endpoint;
use crate::http::error::ApiError;
use crate::http::handlers::{self, display_page, sandbox, sandbox_staff, staff_page};
use crate::http::io::{ApiRequest, ApiResponse};

/// What a handler returns: its response, or the error that becomes one.
pub type Answer<'a> = Pin<Box<dyn Future<Output = Result<ApiResponse, ApiError>> + Send + 'a>>;

/// A handler: the request (its method already checked) in, the answer out.
pub type Handler = for<'a> fn(&'a AppState, &'a ApiRequest) -> Answer<'a>;

/// An endpoint and the handler that serves it.
#[derive(Clone, Copy)]
pub struct Route {
    /// Its path and methods.
    pub endpoint: Endpoint,
    /// What answers it, once the router has checked the method (and refused
    /// a sandbox-only endpoint outside the sandbox).
    pub handler: Handler,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Route").field(&self.endpoint).finish()
    }
}

impl Route {
    /// The route of `endpoint`, from [`ALL`]: for the local server, tests
    /// and benchmarks (a Lambda function names its routes instead).
    pub fn of(endpoint: Endpoint) -> Route {
        ALL.into_iter()
            .find(|route| route.endpoint == endpoint)
            .expect("every endpoint has its route (a unit test checks)")
    }
}

/// `POST /api/v1/display`: open a call, or close an address's calls.
pub const DISPLAY: Route = Route {
    endpoint: Endpoint::Display,
    handler: |state, request| Box::pin(handlers::display::handle(state, request)),
};
/// `POST /api/v1/element`: the elements' battery, position and reachability.
pub const ELEMENT: Route = Route {
    endpoint: Endpoint::Element,
    handler: |state, request| Box::pin(handlers::element::handle(state, request)),
};
/// `GET /api/v1/display/call-types`: the call types' names.
pub const CALL_TYPES: Route = Route {
    endpoint: Endpoint::CallTypes,
    handler: |state, _| Box::pin(handlers::call_types::list(state)),
};
/// `POST /api/v1/sandbox/consumers`: a new sandbox consumer and secret.
pub const SANDBOX_CONSUMERS: Route = Route {
    endpoint: Endpoint::SandboxConsumers,
    handler: |state, request| Box::pin(sandbox::create_consumer(state, request)),
};
/// `GET /api/v1/sandbox/state`: a sandbox consumer's calls, elements and mismatches.
pub const SANDBOX_STATE: Route = Route {
    endpoint: Endpoint::SandboxState,
    handler: |state, request| Box::pin(sandbox::state(state, request)),
};
/// `POST /api/v1/sandbox/staff`: a staff member of the visitor's scope.
pub const SANDBOX_STAFF: Route = Route {
    endpoint: Endpoint::SandboxStaff,
    handler: |state, request| Box::pin(sandbox_staff::create(state, request)),
};
/// `GET /`: the sandbox's test page.
pub const TEST_PAGE: Route = Route {
    endpoint: Endpoint::TestPage,
    handler: |state, request| Box::pin(sandbox::page(state, request)),
};
/// `GET /display`: the display page.
pub const DISPLAY_PAGE: Route = Route {
    endpoint: Endpoint::DisplayPage,
    handler: |state, request| Box::pin(display_page::page(state, request)),
};
/// `GET /api/v1/display/calls`: the open calls a display shows.
pub const DISPLAY_CALLS: Route = Route {
    endpoint: Endpoint::DisplayCalls,
    handler: |state, request| Box::pin(handlers::display_read::calls(state, request)),
};
/// `GET /api/v1/display/elements`: the elements, and those that need attention.
pub const DISPLAY_ELEMENTS: Route = Route {
    endpoint: Endpoint::DisplayElements,
    handler: |state, request| Box::pin(handlers::display_read::elements(state, request)),
};
/// `GET /api/v1/openapi.json`: the interface document.
pub const OPEN_API: Route = Route {
    endpoint: Endpoint::OpenApi,
    handler: |_, _| Box::pin(std::future::ready(Ok(handlers::openapi::document()))),
};
/// `GET /api/v1/staff/me`: who the staff token is, and their duty.
pub const STAFF_ME: Route = Route {
    endpoint: Endpoint::StaffMe,
    handler: |state, request| Box::pin(handlers::staff::me(state, request)),
};
/// `PUT` and `DELETE /api/v1/staff/duty`: sign on and off.
pub const STAFF_DUTY: Route = Route {
    endpoint: Endpoint::StaffDuty,
    handler: |state, request| Box::pin(handlers::staff::duty(state, request)),
};
/// `GET /api/v1/staff/calls`: the calls alerting the person, then the others.
pub const STAFF_CALLS: Route = Route {
    endpoint: Endpoint::StaffCalls,
    handler: |state, request| Box::pin(handlers::staff_calls::calls(state, request)),
};
/// `POST /api/v1/staff/calls/{id}/responses`: accept, decline or read a call.
pub const STAFF_RESPONSES: Route = Route {
    endpoint: Endpoint::StaffResponses,
    handler: |state, request| Box::pin(handlers::staff_calls::respond(state, request)),
};
/// `POST /api/v1/response`: an alarm server passes on a handset's answer.
pub const ALARM_RESPONSE: Route = Route {
    endpoint: Endpoint::AlarmResponse,
    handler: |state, request| Box::pin(handlers::alarm_response::handle(state, request)),
};
/// `POST /api/v1/staff/receipts`: a phone or page got an alert (§18).
pub const STAFF_RECEIPTS: Route = Route {
    endpoint: Endpoint::StaffReceipts,
    handler: |state, request| Box::pin(handlers::staff_receipts::receipt(state, request)),
};
/// `POST /api/v1/staff/device-tests`: the sign-on test again (§18).
pub const STAFF_DEVICE_TESTS: Route = Route {
    endpoint: Endpoint::StaffDeviceTests,
    handler: |state, request| Box::pin(handlers::staff_devices::test_again(state, request)),
};
/// `GET /api/v1/staff/push-key`: the installation's VAPID public key.
pub const STAFF_PUSH_KEY: Route = Route {
    endpoint: Endpoint::StaffPushKey,
    handler: |state, request| Box::pin(handlers::staff_push::push_key(state, request)),
};
/// `POST` and `DELETE /api/v1/staff/push-subscriptions`: a browser's Web Push.
pub const STAFF_PUSH_SUBSCRIPTIONS: Route = Route {
    endpoint: Endpoint::StaffPushSubscriptions,
    handler: |state, request| Box::pin(handlers::staff_push::subscriptions(state, request)),
};
/// `GET /staff`: the staff page.
pub const STAFF_PAGE: Route = Route {
    endpoint: Endpoint::StaffPage,
    handler: |state, request| Box::pin(staff_page::page(state, request)),
};
/// `GET /staff/manifest.webmanifest`: the staff page's web app manifest.
pub const STAFF_MANIFEST: Route = Route {
    endpoint: Endpoint::StaffManifest,
    handler: |state, request| Box::pin(staff_page::manifest_file(state, request)),
};
/// `GET /staff/sw.js`: the staff page's service worker.
pub const STAFF_SERVICE_WORKER: Route = Route {
    endpoint: Endpoint::StaffServiceWorker,
    handler: |state, request| Box::pin(staff_page::service_worker(state, request)),
};

/// `POST /api/v1/heartbeat`: a central system says it is alive (§19).
pub const HEARTBEAT: Route = Route {
    endpoint: Endpoint::Heartbeat,
    handler: |state, request| Box::pin(handlers::heartbeat::handle(state, request)),
};

/// Every route, in [`Endpoint::ALL`]'s order: what the local server serves.
pub const ALL: [Route; Endpoint::ALL.len()] = [
    DISPLAY,
    ELEMENT,
    CALL_TYPES,
    SANDBOX_CONSUMERS,
    SANDBOX_STATE,
    SANDBOX_STAFF,
    TEST_PAGE,
    DISPLAY_PAGE,
    DISPLAY_CALLS,
    DISPLAY_ELEMENTS,
    OPEN_API,
    STAFF_ME,
    STAFF_DUTY,
    STAFF_CALLS,
    STAFF_RESPONSES,
    ALARM_RESPONSE,
    STAFF_RECEIPTS,
    STAFF_DEVICE_TESTS,
    STAFF_PUSH_KEY,
    STAFF_PUSH_SUBSCRIPTIONS,
    STAFF_PAGE,
    STAFF_MANIFEST,
    STAFF_SERVICE_WORKER,
    HEARTBEAT,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_has_one_route_in_order() {
        let routed: Vec<Endpoint> = ALL.iter().map(|route| route.endpoint).collect();
        assert_eq!(routed, Endpoint::ALL.to_vec());
        for endpoint in Endpoint::ALL {
            assert_eq!(Route::of(endpoint).endpoint, endpoint);
        }
    }
}
