//! Staff on the wire (DECISIONS §14): who a person is and their duty, as
//! `GET /api/v1/staff/me` and the duty endpoints answer, and a sandbox
//! visitor's staff in the test page's state (DECISIONS §8). Never a token.

use chrono_tz::Tz;
use serde::Serialize;

use crate::domain::alarm::{Duty, Staff};
use crate::domain::device::{Device, DeviceState};
use crate::domain::wire_time::format_local;

/// A duty on the wire, its times in the installation's zone.
#[derive(Debug, Serialize)]
pub(crate) struct DutyRecord<'a> {
    /// Empty: the whole house.
    pub sections: &'a [String],
    pub since: String,
    pub until: String,
}

impl<'a> DutyRecord<'a> {
    pub(crate) fn new(duty: &'a Duty, zone: Tz) -> Self {
        DutyRecord {
            sections: &duty.sections,
            since: format_local(duty.since, zone),
            until: format_local(duty.until, zone),
        }
    }
}

/// One of a person's devices on the wire (DECISIONS §18): its tag, when it
/// subscribed, its last receipt and its state; never its endpoint.
#[derive(Debug, Serialize)]
pub(crate) struct DeviceRecord {
    pub id: String,
    pub created_at: String,
    pub last_receipt_at: Option<String>,
    pub state: &'static str,
}

impl DeviceRecord {
    pub(crate) fn new(device: &Device, state: DeviceState, zone: Tz) -> Self {
        DeviceRecord {
            id: device.tag(),
            created_at: format_local(device.created_at, zone),
            last_receipt_at: device.received_at.map(|at| format_local(at, zone)),
            state: state.as_str(),
        }
    }
}

/// A staff member on the wire: who, their groups, their duty now (`null`
/// when signed off); never a token. `GET /api/v1/staff/me`'s `data` (with
/// their `devices`), and each of a visitor's staff in
/// `GET /api/v1/sandbox/state` (without).
#[derive(Debug, Serialize)]
pub(crate) struct StaffRecord<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub groups: &'a [String],
    pub duty: Option<DutyRecord<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<DeviceRecord>>,
    /// Colleagues on duty beside them whose devices are all silent
    /// ("Telefon stumm", §18); with `devices` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silent_colleagues: Option<Vec<ColleagueRecord<'a>>>,
}

/// A colleague on the wire: who, and the sections of their duty (empty: the
/// whole house).
#[derive(Debug, Serialize)]
pub(crate) struct ColleagueRecord<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub sections: &'a [String],
}

impl<'a> ColleagueRecord<'a> {
    pub(crate) fn new(staff: &'a Staff, duty: &'a Duty) -> Self {
        ColleagueRecord {
            id: &staff.id,
            name: &staff.name,
            sections: &duty.sections,
        }
    }
}

impl<'a> StaffRecord<'a> {
    pub(crate) fn new(staff: &'a Staff, duty: Option<&'a Duty>, zone: Tz) -> Self {
        StaffRecord {
            id: &staff.id,
            name: &staff.name,
            groups: &staff.groups,
            duty: duty.map(|duty| DutyRecord::new(duty, zone)),
            devices: None,
            silent_colleagues: None,
        }
    }

    /// The same record with the person's devices and the colleagues beside
    /// them whose phones are silent (`GET /api/v1/staff/me`).
    pub(crate) fn with_devices(
        self,
        devices: Vec<DeviceRecord>,
        silent_colleagues: Vec<ColleagueRecord<'a>>,
    ) -> Self {
        StaffRecord {
            devices: Some(devices),
            silent_colleagues: Some(silent_colleagues),
            ..self
        }
    }

    /// A sandbox visitor's staff who are not revoked, in the order given,
    /// each with their duty now.
    pub(crate) fn list(staff: &'a [Staff], duties: &'a [Duty], zone: Tz) -> Vec<Self> {
        staff
            .iter()
            .filter(|member| !member.revoked)
            .map(|member| {
                let duty = duties.iter().find(|duty| duty.staff_id == member.id);
                StaffRecord::new(member, duty, zone)
            })
            .collect()
    }
}
