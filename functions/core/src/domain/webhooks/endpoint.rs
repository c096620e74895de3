//! The endpoints an admin registers (`nurse-call-admin webhooks create`,
//! DECISIONS §16): where events go, which ones, for which sections, and the
//! secrets they are signed with.

use chrono::{DateTime, Utc};
use url::{Host, Url};

use super::event::{Event, EventType};

/// Random bytes in a new secret, shown as `whsec_` and their base64.
pub(crate) const SECRET_BYTES: usize = 24;
/// The prefix of a Standard Webhooks secret.
pub(crate) const SECRET_PREFIX: &str = "whsec_";

/// A receiver of events an admin registered: an alarm server, a DECT or
/// pager gateway (DECISIONS §16).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `ep_` and a UUID v4 in 32 hex digits, given by `webhooks create`.
    pub id: String,
    /// What displays call it when it fails ("Weiterleitung gestört: <name>");
    /// the URL's host unless the admin names it.
    pub name: String,
    /// Where each attempt is posted, as [`check_url`] normalised it.
    pub url: String,
    /// The event types it wants; empty: every type.
    pub events: Vec<EventType>,
    /// The sections it wants; empty: the whole house.
    pub sections: Vec<String>,
    /// Active secrets, newest last: one, or two during a rotation, when
    /// every attempt carries a signature of each.
    pub secrets: Vec<String>,
    /// Set by `webhooks disable`: nothing is sent to it, and events written
    /// meanwhile never will be.
    pub disabled: bool,
    /// When it was registered (UTC).
    pub created_at: DateTime<Utc>,
    /// Since when every attempt to it failed (the first failure after its
    /// last success); `None` while it works.
    pub failing_since: Option<DateTime<Utc>>,
    /// Set by `webhooks create --confirms-delivery` (DECISIONS §16, §18):
    /// the alarm server sends `received` for its handsets itself. Without
    /// it, its 2xx to a `call.alert` is the receipt of the recipients with
    /// a device. Endpoints stored before the flag existed read `false`.
    pub confirms_delivery: bool,
    /// Set by `webhooks create --private-network` (DECISIONS §20): the
    /// alarm server is on the home's own network (or this machine), so its
    /// host may be or resolve to a private, loopback or link-local address.
    /// Without it such addresses are refused at every connection.
    /// Endpoints stored before the flag existed read `false`.
    pub private_network: bool,
}

impl Endpoint {
    /// Whether `event` goes to this endpoint. An event without a section
    /// goes to every endpoint that wants its type, also to those that filter
    /// by section: a call that cannot be placed is rather sent to too many
    /// gateways than to none.
    pub fn wants(&self, event: &Event) -> bool {
        self.wants_kind(event.kind, event.section.as_deref())
    }

    /// [`Endpoint::wants`] from an event's type and section alone (the
    /// dispatcher asks before it renders a body).
    pub fn wants_kind(&self, kind: EventType, section: Option<&str>) -> bool {
        if self.disabled {
            return false;
        }
        let type_wanted = self.events.is_empty() || self.events.contains(&kind);
        let section_wanted = match section {
            None => true,
            Some(section) => self.sections.is_empty() || self.sections.iter().any(|s| s == section),
        };
        type_wanted && section_wanted
    }

    /// Whether its 2xx to a `call.alert` is the receipt of the recipients
    /// with a device named in it (DECISIONS §16): only where the alarm
    /// server does not promise `received` itself.
    pub fn answer_is_receipt(&self) -> bool {
        !self.confirms_delivery
    }

    /// The names of the event types it wants (`call.opened`, …), as both
    /// stores keep them; empty: every type.
    pub fn event_names(&self) -> Vec<String> {
        self.events.iter().map(|t| t.as_str().to_string()).collect()
    }
}

/// Whether a call of `section` (`None`: without one) reaches handsets
/// through an alarm server: some endpoint of `endpoints` is enabled and
/// gets its `call.alert` (DECISIONS §18: a person whose device is served
/// so has a channel, though no push subscription and no open page).
pub fn alerts_reach_handsets(endpoints: &[Endpoint], section: Option<&str>) -> bool {
    endpoints
        .iter()
        .any(|endpoint| endpoint.wants_kind(EventType::CallAlert, section))
}

/// Why a URL is not accepted for an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlProblem {
    /// Not a URL at all.
    Unreadable(String),
    /// Neither `https`, nor `http` to this machine.
    NotHttps,
    /// A user name or password in the URL: it would be shown by `list` and
    /// logged with every failed delivery.
    Credentials,
    /// A `#…` part, which is never sent.
    Fragment,
}

impl std::fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlProblem::Unreadable(why) => write!(f, "not a URL: {why}"),
            UrlProblem::NotHttps => f.write_str(
                "must start with https:// (http:// only to this machine, with --private-network: localhost, 127.0.0.1, [::1])",
            ),
            UrlProblem::Credentials => f.write_str(
                "must not contain a user name or password (the body is signed with the endpoint's secret instead)",
            ),
            UrlProblem::Fragment => f.write_str("must not contain a #fragment"),
        }
    }
}

/// The URL an endpoint may have (DECISIONS §16): `https`, or `http` to the
/// loopback interface (a gateway on the same machine, and the tests'
/// receivers). Returned normalised, as it is stored and shown.
pub fn check_url(url: &str) -> Result<String, UrlProblem> {
    let parsed = Url::parse(url.trim()).map_err(|e| UrlProblem::Unreadable(e.to_string()))?;
    let loopback = match parsed.host() {
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(address)) => address.is_loopback(),
        Some(Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" if parsed.host().is_some() => {}
        "http" if loopback => {}
        _ => return Err(UrlProblem::NotHttps),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlProblem::Credentials);
    }
    if parsed.fragment().is_some() {
        return Err(UrlProblem::Fragment);
    }
    Ok(parsed.to_string())
}

/// The name an endpoint gets when the admin gives none: its URL's host
/// (and port), what a nurse's colleague in IT recognises.
pub fn default_name(url: &str) -> String {
    Url::parse(url)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.to_string();
            Some(match u.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
        .unwrap_or_else(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn endpoint(events: &[EventType], sections: &[&str]) -> Endpoint {
        Endpoint {
            id: "e-1".into(),
            name: "alarm.example".into(),
            url: "https://alarm.example/hook".into(),
            events: events.to_vec(),
            sections: sections.iter().map(|s| s.to_string()).collect(),
            secrets: vec!["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into()],
            disabled: false,
            created_at: Utc.with_ymd_and_hms(2026, 11, 26, 0, 0, 0).unwrap(),
            failing_since: None,
            confirms_delivery: false,
            private_network: false,
        }
    }

    fn event(kind: EventType, section: Option<&str>) -> Event {
        Event::new(
            "msg_1".into(),
            kind,
            Utc.with_ymd_and_hms(2026, 11, 26, 7, 0, 0).unwrap(),
            Some(1),
            section.map(str::to_string),
            json!({}),
        )
    }

    #[test]
    fn https_anywhere_and_http_only_to_this_machine() {
        assert_eq!(
            check_url("https://alarm.example:8443/espa?x=1"),
            Ok("https://alarm.example:8443/espa?x=1".into())
        );
        for local in [
            "http://localhost:9000/hook",
            "http://127.0.0.1:9000/hook",
            "http://127.8.0.1/",
            "http://[::1]:9000/hook",
        ] {
            assert!(check_url(local).is_ok(), "{local}");
        }
        for refused in [
            "http://alarm.example/hook",
            "http://10.0.0.5/hook",
            "ftp://alarm.example/",
            "https://",
            "file:///etc/passwd",
        ] {
            assert!(check_url(refused).is_err(), "{refused}");
        }
        assert_eq!(
            check_url("https://user:pw@alarm.example/"),
            Err(UrlProblem::Credentials)
        );
        assert_eq!(
            check_url("https://alarm.example/#x"),
            Err(UrlProblem::Fragment)
        );
        assert!(matches!(
            check_url("not a url"),
            Err(UrlProblem::Unreadable(_))
        ));
    }

    #[test]
    fn filters_by_type_and_section_and_nothing_when_disabled() {
        let all = endpoint(&[], &[]);
        assert!(all.wants(&event(EventType::CallClosed, Some("WB 1"))));
        assert!(all.wants(&event(EventType::ElementAttention, None)));

        let alerts_of_wb1 = endpoint(&[EventType::CallAlert], &["WB 1"]);
        assert!(alerts_of_wb1.wants(&event(EventType::CallAlert, Some("WB 1"))));
        assert!(!alerts_of_wb1.wants(&event(EventType::CallAlert, Some("WB 2"))));
        assert!(!alerts_of_wb1.wants(&event(EventType::CallClosed, Some("WB 1"))));
        assert!(
            alerts_of_wb1.wants(&event(EventType::CallAlert, None)),
            "a call without a section goes to every gateway of its type"
        );

        let disabled = Endpoint {
            disabled: true,
            ..all
        };
        for kind in EventType::ALL {
            assert!(!disabled.wants(&event(kind, None)));
        }
    }

    #[test]
    fn handsets_are_reached_by_an_enabled_endpoint_that_gets_the_alert() {
        let section_1 = endpoint(&[EventType::CallAlert], &["1"]);
        let cancels = endpoint(&[EventType::CallCancelled], &[]);
        let off = Endpoint {
            disabled: true,
            ..endpoint(&[], &[])
        };
        assert!(alerts_reach_handsets(
            &[cancels.clone(), section_1.clone()],
            Some("1")
        ));
        assert!(!alerts_reach_handsets(
            &[cancels.clone(), section_1.clone()],
            Some("2")
        ));
        assert!(alerts_reach_handsets(
            std::slice::from_ref(&section_1),
            None
        ));
        assert!(!alerts_reach_handsets(&[cancels, off], Some("1")));
        assert!(!alerts_reach_handsets(&[], None));
    }
}
