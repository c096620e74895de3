//! The people alarms reach (DECISIONS §14): staff members, their duty, and
//! who a level's audience is at a given moment.

use chrono::{DateTime, Utc};

use crate::domain::alarm::policy::Audience;
use crate::domain::model::Scope;

/// A member of staff. Authenticates with a bearer token of which only the
/// SHA-256 is kept (as displays do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staff {
    /// UUID v4, lowercase.
    pub id: String,
    /// Whose calls they see: the installation, or a sandbox visitor.
    pub scope: Scope,
    /// Shown to colleagues and on displays (personal data).
    pub name: String,
    /// Group names (`Leitung`, `Technik`), for `group:<name>` levels.
    pub groups: Vec<String>,
    /// Their DECT handset or pager, passed to alarm servers (§16).
    pub device: Option<String>,
    /// Lowercase hex SHA-256 of the token.
    pub token_hash: String,
    /// When they were created (UTC); a sandbox visitor's staff expire 30 days
    /// later.
    pub created_at: DateTime<Utc>,
    /// Revoked by an admin: their token no longer works and no level alerts
    /// them.
    pub revoked: bool,
}

impl Staff {
    /// Most staff a sandbox visitor may create.
    pub const SANDBOX_LIMIT: usize = 20;

    /// Whether `group` is one of their groups (exact name), for a
    /// `group:<name>` level.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// A staff member signed on for sections (none = the whole house) until a
/// time: a duty ends by itself after `DUTY_HOURS` (§10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duty {
    /// Whose duty ([`Staff::id`]).
    pub staff_id: String,
    /// The scope of that staff member, whose calls the duty covers.
    pub scope: Scope,
    /// Section codes; empty = the whole house.
    pub sections: Vec<String>,
    /// When they signed on (UTC).
    pub since: DateTime<Utc>,
    /// When it ends by itself (UTC, excluded): `since` + `DUTY_HOURS`, unless
    /// they sign off before.
    pub until: DateTime<Utc>,
}

impl Duty {
    /// Whether the duty runs at `now`: from `since` up to, not including,
    /// `until`.
    pub fn is_active(&self, now: DateTime<Utc>) -> bool {
        self.since <= now && now < self.until
    }

    /// Whether this duty covers a call of `section`: a duty for the whole
    /// house covers every call, a call without section every duty.
    pub fn covers(&self, section: Option<&str>) -> bool {
        match section {
            Some(section) => self.sections.is_empty() || self.sections.iter().any(|s| s == section),
            None => true,
        }
    }

    /// Whether this duty and `other` can be alerted for one call: either is
    /// for the whole house, or they name a section in common. Colleagues'
    /// "Telefon stumm" (§18) is shown where it matters to the reader.
    pub fn shares_a_section_with(&self, other: &Duty) -> bool {
        self.sections.is_empty()
            || other.sections.is_empty()
            || self.sections.iter().any(|s| other.sections.contains(s))
    }
}

/// Who can be alerted at one moment: the scope's staff and their duties.
#[derive(Debug, Clone, Copy)]
pub struct Roster<'a> {
    /// The scope's staff, revoked members included (never in an audience).
    pub staff: &'a [Staff],
    /// The scope's duties; those not active at `now` count for nothing.
    pub duties: &'a [Duty],
    /// The moment the engine steps to (UTC): its only clock.
    pub now: DateTime<Utc>,
}

impl<'a> Roster<'a> {
    /// The staff member of `id`, revoked or not.
    pub fn member(&self, id: &str) -> Option<&'a Staff> {
        self.staff.iter().find(|s| s.id == id)
    }

    fn on_duty(&self, staff: &Staff, section: Option<&str>) -> bool {
        self.duties
            .iter()
            .any(|d| d.staff_id == staff.id && d.is_active(self.now) && d.covers(section))
    }

    /// Who `audience` is for a call of `section`, by id, in the roster's
    /// order; never a revoked member. `house` = everyone on duty, `section`
    /// = on duty for that section or the whole house (a call without
    /// section: everyone on duty), a group = its members, on duty or not.
    pub fn audience(&self, audience: &Audience, section: Option<&str>) -> Vec<&'a Staff> {
        self.staff
            .iter()
            .filter(|s| !s.revoked)
            .filter(|s| match audience {
                Audience::Section => self.on_duty(s, section),
                Audience::House => self.on_duty(s, None),
                Audience::Group(group) => s.in_group(group),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 25, 8, minute, 0).unwrap()
    }

    fn staff(id: &str, groups: &[&str]) -> Staff {
        Staff {
            id: id.to_string(),
            scope: Scope::installation(),
            name: id.to_uppercase(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            device: None,
            token_hash: String::new(),
            created_at: at(0),
            revoked: false,
        }
    }

    fn duty(id: &str, sections: &[&str], until: u32) -> Duty {
        Duty {
            staff_id: id.to_string(),
            scope: Scope::installation(),
            sections: sections.iter().map(|s| s.to_string()).collect(),
            since: at(0),
            until: at(until),
        }
    }

    #[test]
    fn duties_share_a_section_when_either_is_the_whole_house_or_they_name_one_in_common() {
        let house = duty("a", &[], 10);
        let one = duty("b", &["1"], 10);
        let one_two = duty("c", &["1", "2"], 10);
        let three = duty("d", &["3"], 10);
        assert!(house.shares_a_section_with(&three) && three.shares_a_section_with(&house));
        assert!(one.shares_a_section_with(&one_two) && one_two.shares_a_section_with(&one));
        assert!(!one.shares_a_section_with(&three) && !three.shares_a_section_with(&one_two));
    }

    #[test]
    fn audiences_follow_duty_sections_and_groups() {
        let mut people = vec![
            staff("anna", &[]),
            staff("ben", &["Leitung"]),
            staff("cem", &[]),
            staff("dora", &["Leitung"]),
        ];
        people[3].revoked = true;
        let duties = vec![
            duty("anna", &["1"], 30),
            duty("cem", &[], 30),
            duty("ben", &["2"], 5),
        ];
        let roster = Roster {
            staff: &people,
            duties: &duties,
            now: at(10),
        };
        let ids = |list: Vec<&Staff>| list.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
        assert_eq!(
            ids(roster.audience(&Audience::Section, Some("1"))),
            ["anna", "cem"]
        );
        assert_eq!(
            ids(roster.audience(&Audience::Section, Some("2"))),
            ["cem"],
            "ben's duty ended"
        );
        assert_eq!(
            ids(roster.audience(&Audience::Section, None)),
            ["anna", "cem"]
        );
        assert_eq!(
            ids(roster.audience(&Audience::House, Some("2"))),
            ["anna", "cem"]
        );
        assert_eq!(
            ids(roster.audience(&Audience::Group("Leitung".into()), Some("1"))),
            ["ben"],
            "off duty counts for a group; revoked never"
        );
    }
}
