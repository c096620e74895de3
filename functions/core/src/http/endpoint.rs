//! The service's endpoints: each one's path and methods, and which one a
//! path is (the one path with a parameter, `/api/v1/staff/calls/{id}/responses`,
//! included). The handlers that answer them are in [`crate::http::routes`];
//! [`crate::http::router`] serves a request by them.

use http::Method;

/// One endpoint of the interface (docs/openapi.yaml).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// A central system opens a call or closes an address's calls (spec 4.1).
    Display,
    /// A central system reports battery, position and reachability of its
    /// elements (spec 4.2).
    Element,
    /// The configured call types and their internal names (spec 4.3).
    CallTypes,
    /// Sandbox only (DECISIONS §8).
    SandboxConsumers,
    /// Sandbox only.
    SandboxState,
    /// Sandbox: a visitor creates staff of their own scope (DECISIONS §14).
    SandboxStaff,
    /// The test page at `/`, sandbox only.
    TestPage,
    /// The display page at `/display`, both modes (DECISIONS §11).
    DisplayPage,
    /// Displays: the open calls (DECISIONS §11).
    DisplayCalls,
    /// Displays: the elements and those that need attention (DECISIONS §12).
    DisplayElements,
    /// The interface document, `docs/openapi.yaml` as JSON.
    OpenApi,
    /// Staff: who they are and their duty (DECISIONS §14).
    StaffMe,
    /// Staff: sign on (`PUT`) and off (`DELETE`).
    StaffDuty,
    /// Staff: the calls alerting them, then the others of their sections.
    StaffCalls,
    /// Staff: a response to a call, `/api/v1/staff/calls/{id}/responses`.
    StaffResponses,
    /// An alarm server's response to a call, signed (DECISIONS §16).
    AlarmResponse,
    /// Staff: the receipt of an alert a phone or page showed (DECISIONS §18).
    StaffReceipts,
    /// Staff: push the sign-on test to their devices again ("Erneut
    /// testen", DECISIONS §18).
    StaffDeviceTests,
    /// Staff: the installation's VAPID public key (DECISIONS §15).
    StaffPushKey,
    /// Staff: register (`POST`) or remove (`DELETE`) a browser's push
    /// subscription.
    StaffPushSubscriptions,
    /// The staff page at `/staff`, both modes (DECISIONS §15).
    StaffPage,
    /// The staff page's web app manifest.
    StaffManifest,
    /// The staff page's service worker (Web Push, notification actions).
    StaffServiceWorker,
    /// A central system's heartbeat, signed (DECISIONS §19).
    Heartbeat,
}

/// The one path with a parameter: `{id}` between these two.
const RESPONSES_PREFIX: &str = "/api/v1/staff/calls/";
const RESPONSES_SUFFIX: &str = "/responses";

impl Endpoint {
    /// Every endpoint once, in declaration order: what [`Endpoint::from_path`]
    /// searches, and the order of [`crate::http::routes::ALL`].
    pub const ALL: [Endpoint; 24] = [
        Endpoint::Display,
        Endpoint::Element,
        Endpoint::CallTypes,
        Endpoint::SandboxConsumers,
        Endpoint::SandboxState,
        Endpoint::SandboxStaff,
        Endpoint::TestPage,
        Endpoint::DisplayPage,
        Endpoint::DisplayCalls,
        Endpoint::DisplayElements,
        Endpoint::OpenApi,
        Endpoint::StaffMe,
        Endpoint::StaffDuty,
        Endpoint::StaffCalls,
        Endpoint::StaffResponses,
        Endpoint::AlarmResponse,
        Endpoint::StaffReceipts,
        Endpoint::StaffDeviceTests,
        Endpoint::StaffPushKey,
        Endpoint::StaffPushSubscriptions,
        Endpoint::StaffPage,
        Endpoint::StaffManifest,
        Endpoint::StaffServiceWorker,
        Endpoint::Heartbeat,
    ];

    /// The endpoint's path as the interface document names it;
    /// [`Endpoint::StaffResponses`]' is the template with `{id}`.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Display => "/api/v1/display",
            Endpoint::Element => "/api/v1/element",
            Endpoint::CallTypes => "/api/v1/display/call-types",
            Endpoint::SandboxConsumers => "/api/v1/sandbox/consumers",
            Endpoint::SandboxState => "/api/v1/sandbox/state",
            Endpoint::SandboxStaff => "/api/v1/sandbox/staff",
            Endpoint::TestPage => "/",
            Endpoint::DisplayPage => "/display",
            Endpoint::DisplayCalls => "/api/v1/display/calls",
            Endpoint::DisplayElements => "/api/v1/display/elements",
            Endpoint::OpenApi => "/api/v1/openapi.json",
            Endpoint::StaffMe => "/api/v1/staff/me",
            Endpoint::StaffDuty => "/api/v1/staff/duty",
            Endpoint::StaffCalls => "/api/v1/staff/calls",
            // The template, as the interface document and API Gateway name it.
            Endpoint::StaffResponses => "/api/v1/staff/calls/{id}/responses",
            Endpoint::AlarmResponse => "/api/v1/response",
            Endpoint::StaffReceipts => "/api/v1/staff/receipts",
            Endpoint::StaffDeviceTests => "/api/v1/staff/device-tests",
            Endpoint::StaffPushKey => "/api/v1/staff/push-key",
            Endpoint::StaffPushSubscriptions => "/api/v1/staff/push-subscriptions",
            Endpoint::StaffPage => "/staff",
            Endpoint::StaffManifest => "/staff/manifest.webmanifest",
            Endpoint::StaffServiceWorker => "/staff/sw.js",
            Endpoint::Heartbeat => "/api/v1/heartbeat",
        }
    }

    /// The endpoint's first method (its only one but for
    /// [`Endpoint::StaffDuty`]'s `PUT` and `DELETE` and
    /// [`Endpoint::StaffPushSubscriptions`]' `POST` and `DELETE`,
    /// [`Endpoint::methods`]).
    pub fn method(self) -> Method {
        self.methods()[0].clone()
    }

    /// Every method the endpoint answers; any other is a 405.
    pub fn methods(self) -> &'static [Method] {
        match self {
            Endpoint::Display
            | Endpoint::Element
            | Endpoint::SandboxConsumers
            | Endpoint::SandboxStaff
            | Endpoint::StaffResponses
            | Endpoint::AlarmResponse
            | Endpoint::StaffReceipts
            | Endpoint::StaffDeviceTests
            | Endpoint::Heartbeat => &[Method::POST],
            Endpoint::StaffDuty => &[Method::PUT, Method::DELETE],
            Endpoint::StaffPushSubscriptions => &[Method::POST, Method::DELETE],
            Endpoint::CallTypes
            | Endpoint::SandboxState
            | Endpoint::TestPage
            | Endpoint::DisplayPage
            | Endpoint::DisplayCalls
            | Endpoint::DisplayElements
            | Endpoint::OpenApi
            | Endpoint::StaffMe
            | Endpoint::StaffCalls
            | Endpoint::StaffPushKey
            | Endpoint::StaffPage
            | Endpoint::StaffManifest
            | Endpoint::StaffServiceWorker => &[Method::GET],
        }
    }

    pub(crate) fn allow_header(self) -> &'static str {
        match self.methods() {
            [Method::PUT, Method::DELETE] => "PUT, DELETE",
            [Method::POST, Method::DELETE] => "POST, DELETE",
            [Method::POST] => "POST",
            _ => "GET",
        }
    }

    /// Whether only the test server serves it: a production installation
    /// answers 404, whatever the method.
    pub fn sandbox_only(self) -> bool {
        matches!(
            self,
            Endpoint::SandboxConsumers
                | Endpoint::SandboxState
                | Endpoint::SandboxStaff
                | Endpoint::TestPage
        )
    }

    /// The endpoint at `path`, if any (exact match; no trailing slash).
    /// `/api/v1/staff/calls/<id>/responses` is [`Endpoint::StaffResponses`]
    /// for any one segment `<id>`: its handler answers 404 for an `id` that
    /// is no call.
    pub fn from_path(path: &str) -> Option<Endpoint> {
        let exact = Endpoint::ALL
            .into_iter()
            .find(|e| *e != Endpoint::StaffResponses && e.path() == path);
        exact.or_else(|| response_call_id(path).map(|_| Endpoint::StaffResponses))
    }
}

/// The `{id}` segment of a responses path (not yet checked to be a number).
pub(crate) fn response_call_id(path: &str) -> Option<&str> {
    path.strip_prefix(RESPONSES_PREFIX)?
        .strip_suffix(RESPONSES_SUFFIX)
        .filter(|id| !id.is_empty() && !id.contains('/'))
}
