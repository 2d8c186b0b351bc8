"""Word lists and fact templates the built-in worlds are written from.

Shipped as data (not drawn from Faker) so that the same seed gives byte-identical worlds on every machine and
every library version. Filler text contains no digits and none of the fact keywords, so the only numbers in a
chunk are the fact values it states, section numbers below 32 and years (see `_generate.excluded_value`).
"""

from __future__ import annotations

import attrs

__all__ = [
    "FILLER_SLOTS",
    "FILLER_TEMPLATES",
    "GENERAL_SECTIONS",
    "MONTHS",
    "PRODUCT_ADJECTIVES",
    "PRODUCT_ATTRIBUTES",
    "PRODUCT_EDITIONS",
    "PRODUCT_NOUNS",
    "SHARED_TOPICS",
    "TENANT_TOPICS",
    "FactTopic",
]


@attrs.frozen
class FactTopic:
    """One kind of fact: how a chunk states it, how a case asks it, and the range its value is drawn from.

    Templates use `{org}` (tenant display name), `{product}` (product name) and `{v}` (the value).
    `phrase` is the answer text a gold chunk contains verbatim (it becomes the case's claim).
    """

    key: str
    area: str
    heading: str
    statement: str
    question: str
    phrase: str
    noun: str
    low: int
    high: int


# Policies each tenant may document in its own employee handbook.
TENANT_TOPICS: tuple[FactTopic, ...] = (
    FactTopic("parental-leave", "hr", "Leave and time off",
              "{org} grants {v} days of paid parental leave after the birth or adoption of a child.",
              "How many days of parental leave does {org} grant?", "{v} days",
              "the parental leave allowance at {org}", 40, 200),
    FactTopic("notice-period", "hr", "Resignations",
              "Employees who resign must give {org} {v} days of notice in writing.",
              "How many days of notice must employees give when they resign from {org}?", "{v} days",
              "the days of notice employees who resign must give {org}", 32, 120),
    FactTopic("training-budget", "hr", "Learning and development",
              "Every employee of {org} has a yearly training budget of {v} euros for courses and conferences.",
              "What is the yearly training budget per employee at {org}?", "{v} euros",
              "the yearly training budget at {org}", 300, 5000),
    FactTopic("home-office", "finance", "Home office equipment",
              "{org} pays a one-time home office allowance of {v} euros for desks, chairs and screens.",
              "How large is the home office allowance at {org}?", "{v} euros",
              "the home office allowance at {org}", 100, 1500),
    FactTopic("probation", "hr", "Starting at the company",
              "The probation period for new hires at {org} lasts {v} days.",
              "How many days does the probation period last at {org}?", "{v} days",
              "the probation period at {org}", 60, 180),
    FactTopic("sick-note", "hr", "Illness",
              "{org} asks for a doctor's sick note after {v} hours of continuous absence due to illness.",
              "After how many hours of illness does {org} require a sick note?", "{v} hours",
              "the sick note threshold at {org}", 36, 120),
    FactTopic("password-rotation", "it", "Accounts and passwords",
              "{org} requires every account password to be changed every {v} days.",
              "How often, in days, must passwords be changed at {org}?", "every {v} days",
              "the password rotation interval at {org}", 45, 365),
    FactTopic("laptop-refresh", "it", "Hardware",
              "{org} replaces staff laptops after {v} months of service.",
              "After how many months are laptops replaced at {org}?", "{v} months",
              "the months after which {org} replaces staff laptops", 32, 60),
    FactTopic("expense-approval", "finance", "Expenses",
              "Managers at {org} may approve expenses of up to {v} euros without a finance review.",
              "Up to what amount can managers approve expenses at {org}?", "{v} euros",
              "the amount up to which managers at {org} may approve expenses", 500, 20000),
    FactTopic("overtime-cap", "hr", "Working hours",
              "{org} caps paid overtime at {v} hours per calendar year.",
              "How many hours of overtime per year does {org} allow?", "{v} hours",
              "the yearly overtime cap at {org}", 50, 300),
    FactTopic("sabbatical", "hr", "Sabbaticals",
              "After five years of service, {org} offers a sabbatical of up to {v} days.",
              "How many days of sabbatical can long-serving employees take at {org}?", "{v} days",
              "the sabbatical length at {org}", 60, 365),
    FactTopic("commuting-allowance", "finance", "Commuting",
              "{org} pays a monthly commuting allowance of {v} euros for public transport or cycling.",
              "What is the monthly commuting allowance at {org}?", "{v} euros",
              "the monthly commuting allowance at {org}", 40, 400),
    FactTopic("ticket-retention", "security", "Customer data",
              "{org} deletes closed customer support tickets after {v} days.",
              "After how many days does {org} delete closed customer support tickets?", "{v} days",
              "the days after which {org} deletes closed support tickets", 90, 2000),
    FactTopic("volunteering", "hr", "Volunteering",
              "Staff at {org} may spend {v} hours per year of paid time volunteering for charities.",
              "How many paid volunteering hours per year does {org} offer?", "{v} hours",
              "the paid volunteering hours at {org}", 40, 200),
    FactTopic("wellness-budget", "hr", "Health and wellbeing",
              "{org} reimburses gym and wellness costs of up to {v} euros a year.",
              "How much does {org} reimburse for gym and wellness costs per year?", "{v} euros",
              "the wellness reimbursement at {org}", 100, 1200),
    FactTopic("referral-bonus", "hr", "Hiring",
              "{org} pays a referral bonus of {v} euros when a recommended candidate is hired.",
              "How much is the referral bonus at {org}?", "{v} euros",
              "the referral bonus at {org}", 500, 6000),
)

# Group-wide policies in shared documents (tenant None), visible to every tenant; keys never overlap tenant keys.
SHARED_TOPICS: tuple[FactTopic, ...] = (
    FactTopic("hotel-cap", "travel", "Hotels",
              "Under the group travel policy, hotel nights are reimbursed up to {v} euros.",
              "Up to what amount does the group travel policy reimburse a hotel night?", "{v} euros",
              "the hotel night cap of the group travel policy", 90, 400),
    FactTopic("meal-allowance", "travel", "Meals on trips",
              "The group travel policy grants a daily meal allowance of {v} euros on business trips.",
              "What daily meal allowance does the group travel policy grant on business trips?", "{v} euros",
              "the daily meal allowance on business trips", 35, 90),
    FactTopic("incident-report", "security", "Security incidents",
              "The group security standard says incidents must be reported within {v} minutes of discovery.",
              "Within how many minutes must security incidents be reported under the group security standard?",
              "{v} minutes", "the incident reporting deadline of the group security standard", 45, 240),
    FactTopic("backup-retention", "security", "Backups",
              "Under the group security standard, backups are kept for {v} days before deletion.",
              "How many days are backups kept under the group security standard?", "{v} days",
              "the backup retention of the group security standard", 35, 400),
    FactTopic("vpn-timeout", "it", "Remote access",
              "Idle VPN sessions on the group network disconnect after {v} minutes.",
              "After how many idle minutes do VPN sessions on the group network disconnect?", "{v} minutes",
              "the idle VPN timeout of the group network", 35, 480),
    FactTopic("flight-class", "travel", "Flights",
              "The group travel policy allows business class only on flights longer than {v} minutes.",
              "From how many minutes of flight time does the group travel policy allow business class?",
              "{v} minutes", "the business class threshold of the group travel policy", 240, 720),
    FactTopic("archive-retention", "security", "Records",
              "Signed contracts are archived for {v} months under the group records standard.",
              "For how many months are signed contracts archived under the group records standard?", "{v} months",
              "the months signed contracts are archived under the group records standard", 72, 240),
)

# Facts of a product's documentation; `{product}` is a name unique in the world.
PRODUCT_ATTRIBUTES: tuple[FactTopic, ...] = (
    FactTopic("port", "product", "Networking",
              "By default the {product} service listens on port {v}.",
              "Which port does the {product} service listen on by default?", "port {v}",
              "the default port of the {product} service", 1025, 65000),
    FactTopic("timeout", "product", "Requests",
              "The {product} API aborts a request after {v} seconds without a response.",
              "After how many seconds does the {product} API abort a request?", "{v} seconds",
              "the request timeout of the {product} API", 35, 900),
    FactTopic("rate-limit", "product", "Quotas",
              "The {product} API accepts at most {v} requests per minute from one client.",
              "How many requests per minute does the {product} API accept from one client?", "{v} requests",
              "the rate limit of the {product} API", 100, 50000),
    FactTopic("upload-size", "product", "Uploads",
              "{product} accepts file uploads of up to {v} megabytes.",
              "What is the maximum upload size of {product} in megabytes?", "{v} megabytes",
              "the maximum upload size of {product}", 50, 5000),
    FactTopic("audit-retention", "product", "Audit logs",
              "{product} keeps its audit logs for {v} days.",
              "How many days does {product} keep its audit logs?", "{v} days",
              "the audit log retention of {product}", 35, 3650),
    FactTopic("seats", "product", "Licensing",
              "One {product} licence includes {v} user seats.",
              "How many user seats does one {product} licence include?", "{v} user seats",
              "the seats per {product} licence", 50, 10000),
    FactTopic("cache-ttl", "product", "Caching",
              "{product} caches responses for {v} seconds before fetching them again.",
              "For how many seconds does {product} cache responses?", "{v} seconds",
              "the response cache lifetime of {product}", 60, 86400),
    FactTopic("quota-error", "product", "Errors",
              "When a quota is exhausted, {product} answers with error code {v}.",
              "Which error code does {product} return when a quota is exhausted?", "error code {v}",
              "the quota error code of {product}", 4000, 9999),
)

PRODUCT_ADJECTIVES: tuple[str, ...] = (
    "Amber", "Arctic", "Azure", "Blazing", "Bold", "Brisk", "Bronze", "Calm", "Cobalt", "Copper",
    "Crimson", "Crystal", "Dusky", "Emerald", "Fleet", "Gentle", "Golden", "Granite", "Hidden", "Indigo",
    "Ivory", "Jade", "Lunar", "Misty", "Nimble", "Noble", "Onyx", "Polar", "Quiet", "Rapid",
    "Ruby", "Rustic", "Scarlet", "Silent", "Silver", "Solar", "Steady", "Swift", "Velvet", "Vivid",
)

PRODUCT_NOUNS: tuple[str, ...] = (
    "Albatross", "Badger", "Beacon", "Bison", "Cedar", "Comet", "Condor", "Coyote", "Dolphin", "Falcon",
    "Fjord", "Gazelle", "Glacier", "Harbor", "Heron", "Ibis", "Jaguar", "Kestrel", "Lantern", "Lynx",
    "Magpie", "Marlin", "Meadow", "Meteor", "Nebula", "Orchid", "Osprey", "Otter", "Panther", "Pelican",
    "Quasar", "Raven", "Sequoia", "Sparrow", "Summit", "Tundra", "Walrus", "Willow", "Wombat", "Zephyr",
)

PRODUCT_EDITIONS: tuple[str, ...] = (
    "Cloud", "Edge", "Mobile", "Server", "Lite", "Studio", "Gateway", "Hub", "Vault", "Console",
)

# Section headings of chunks that state no fact (overviews, etiquette, release notes...).
GENERAL_SECTIONS: tuple[str, ...] = (
    "About this document", "Working with vendors", "Office etiquette", "Meeting culture", "Onboarding checklist",
    "Document handling", "Architecture overview", "Troubleshooting", "Glossary", "Release notes",
    "Contacts and escalation", "Accessibility", "Known limitations", "Change management", "Support channels",
)

FILLER_TEMPLATES: tuple[str, ...] = (
    "The {team} team reviews this guidance every {period} and announces changes on the {channel}.",
    "Questions about this section go to the {team} team through the {channel}.",
    "Managers should discuss {subject} with their {people} before {event}.",
    "The {team} team keeps a record of {subject} in the {system}.",
    "Exceptions need written approval from the {role}.",
    "Templates for {subject} are available on the {channel}.",
    "This section applies to {people} in every {unit}.",
    "Where local law is stricter, the local rule takes precedence over this section.",
    "Please read the section on {subject} before contacting the {team} team.",
    "The {role} may grant exceptions for {people} in a single {unit}.",
    "Changes to {subject} are tracked in the {system} and reviewed every {period}.",
    "New {people} receive a short introduction to {subject} during their first week.",
)

FILLER_SLOTS: dict[str, tuple[str, ...]] = {
    "team": ("people", "finance", "platform", "workplace", "legal", "support", "facilities", "operations",
             "procurement", "compliance"),
    "period": ("quarter", "spring", "autumn", "half year", "planning cycle"),
    "channel": ("intranet", "staff portal", "team wiki", "internal newsletter", "help desk", "company chat"),
    "subject": ("workload planning", "onboarding checklists", "vendor contracts", "access reviews",
                "equipment orders", "project staffing", "meeting schedules", "desk bookings", "document reviews",
                "handover notes"),
    "people": ("direct reports", "new joiners", "contractors", "interns", "team members", "apprentices"),
    "event": ("the start of a project", "the annual review", "a change of team", "a reorganisation",
              "the end of the quarter"),
    "system": ("asset register", "ticket tracker", "document archive", "people database", "contract registry"),
    "role": ("department head", "regional director", "compliance officer", "chief operating officer",
             "works council"),
    "unit": ("office", "region", "business unit", "country", "department"),
}

MONTHS: tuple[str, ...] = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
