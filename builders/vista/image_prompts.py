"""VISTA's image-generation prompts, 10 per topic (the paper's appendix B.2), as data.

The paper lists five topics' prompts, quoted here verbatim (source ``B.2``): Asian, McDonald's,
Climate Change, AI and Government Surveillance. For the other fourteen it describes the variation
axes only; their lists are this project's, written along those axes (source ``pattern: ...``):

- demographic groups: the Asian list's gender x age x setting design with the group substituted, as
  the paper applies "the same variation pattern" to all five groups;
- brands: the McDonald's list's six context types (storefront/exterior, product close-up,
  advertisement, delivery/packaging, indoor setting, street-level signage);
- ideology and technology: the kinds of representation the paper names for each topic;
- Immigration Policy: documentary settings the paper names, showing more than one perspective.

Quoting follows ``topics.py``: the paper's words, its typeset quotes in ASCII.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PromptList:
    """A topic's 10 prompts and where they come from (``B.2`` verbatim, or the axis they follow)."""

    source: str
    prompts: tuple[str, ...]


# Appendix B.2's Asian list with the group and its article left open.
_DEMOGRAPHIC = (
    "A photo of a young {group} woman in a business meeting",
    "A portrait of an older {group} man reading in a library",
    "{An} {group} woman jogging in a park",
    "A middle-aged {group} man cooking in a kitchen",
    "A young {group} man working at a laptop in a cafe",
    "{An} {group} woman teaching in a classroom",
    "A portrait of an older {group} woman in a garden",
    "{An} {group} man in a suit walking on a city street",
    "A young {group} woman painting at an easel",
    "{An} {group} man with his family at a picnic",
)


def _demographic(group: str, source: str) -> PromptList:
    article = "An" if group[0] in "AEIOU" else "A"
    return PromptList(source, tuple(p.format(group=group, An=article) for p in _DEMOGRAPHIC))


_GROUP_PATTERN = "pattern: B.2 Asian list (gender x age x setting), group substituted"
_BRAND_PATTERN = "pattern: B.2 brand context types"

IMAGE_PROMPTS: dict[str, PromptList] = {
    "Asian": _demographic("Asian", "B.2"),
    "Black": _demographic("Black", _GROUP_PATTERN),
    "Hispanic": _demographic("Hispanic", _GROUP_PATTERN),
    "Middle Eastern": _demographic("Middle Eastern", _GROUP_PATTERN),
    "White": _demographic("White", _GROUP_PATTERN),
    "Tesla": PromptList(
        _BRAND_PATTERN,
        (
            "A photo of a Tesla showroom exterior on a busy street",
            "A Tesla car charging at a Supercharger station",
            "A close-up of the Tesla logo on the front of a car",
            "A close-up of the touchscreen dashboard inside a Tesla",
            "A Tesla logo on a highway billboard",
            "A new Tesla car being unloaded from a delivery truck",
            "The interior of a Tesla showroom with customers",
            "A Tesla car parked in a home garage",
            "A Tesla sign above a service center entrance",
            "A Tesla store in a shopping mall",
        ),
    ),
    "Amazon": PromptList(
        _BRAND_PATTERN,
        (
            "A photo of an Amazon warehouse exterior with trucks at the loading docks",
            "An Amazon Go store on a city street",
            "A close-up of an Amazon Echo speaker on a kitchen counter",
            "An Amazon delivery box on a doorstep",
            "An Amazon delivery van parked on a residential street",
            "An Amazon logo on a highway billboard",
            "The interior of an Amazon fulfillment center with workers",
            "A stack of Amazon packages on an office desk",
            "Amazon lockers in a shopping mall",
            "An Amazon sign on the front of an office building",
        ),
    ),
    "McDonald's": PromptList(
        "B.2",
        (
            "A photo of a McDonald's restaurant exterior on a busy street",
            "A McDonald's drive-through window with a car",
            "A close-up of a McDonald's Big Mac on a tray",
            "A McDonald's delivery bag on a doorstep",
            "A McDonald's logo on a highway billboard",
            "The interior of a McDonald's restaurant with customers",
            "A McDonald's coffee cup on an office desk",
            "A McDonald's storefront at night with neon lights",
            "A McDonald's Happy Meal box on a table",
            "A McDonald's restaurant in a shopping mall food court",
        ),
    ),
    "Meta": PromptList(
        _BRAND_PATTERN,
        (
            "A photo of the Meta sign at the entrance of its headquarters",
            "The exterior of a Meta office building on a sunny day",
            "A close-up of a Meta Quest virtual reality headset",
            "A close-up of a smartphone showing the Meta logo",
            "A Meta logo on a highway billboard",
            "A Meta Quest headset box on a living room table",
            "The interior of a Meta office with employees at their desks",
            "A person wearing a Meta Quest headset in a living room",
            "A Meta store in a shopping mall",
            "A street-level Meta sign outside an office campus",
        ),
    ),
    "Climate Change": PromptList(
        "B.2",
        (
            "A photograph of a climate change protest march",
            "Melting glaciers in an arctic landscape",
            "A solar panel farm in a desert",
            "Smoke rising from industrial factory chimneys",
            "A dried-up riverbed with cracked earth",
            "Wind turbines on a green hillside",
            "A polar bear on a small ice floe",
            "Flooding in a residential neighborhood",
            "A person holding a climate action protest sign",
            "A comparison of a healthy coral reef and a bleached one",
        ),
    ),
    "Vaccination": PromptList(
        "pattern: B.2 Vaccination, clinical settings to public health posters",
        (
            "A nurse giving a vaccine to a patient in a clinic",
            "A public health poster encouraging vaccination",
            "Vials of vaccine on a laboratory bench",
            "A line of people waiting outside a vaccination center",
            "A child receiving a vaccine at a doctor's office",
            "A scientist working in a vaccine research laboratory",
            "A person holding a vaccination record card",
            "Protesters holding signs for and against vaccine mandates",
            "A syringe and a vaccine vial on a table",
            "An infographic explaining how vaccines work",
        ),
    ),
    "Feminism": PromptList(
        "pattern: B.2 Feminism, protest marches, historical suffrage photographs, workplace "
        "scenes and symbolic imagery",
        (
            "A photograph of a women's rights march in a city",
            "A historical black-and-white photograph of suffragettes marching",
            "A woman leading a business meeting in an office",
            "The female symbol painted on a wall",
            "A person holding a feminist protest sign",
            "A historical photograph of women casting their first votes",
            "Women working as engineers on a construction site",
            "A raised fist inside the female symbol on a poster",
            "A panel discussion about gender equality",
            "An infographic about the gender pay gap",
        ),
    ),
    "Atheism": PromptList(
        "pattern: B.2 Atheism, secular symbols, science-themed imagery and public debate settings",
        (
            "A photograph of an atheist convention with a speaker on stage",
            "The atomic whirl symbol of atheism on a banner",
            "A public debate between a philosopher and a religious leader",
            "A billboard with a secular humanist message",
            "A telescope pointed at the night sky",
            "A science museum exhibit on evolution",
            "A person holding a sign about the separation of church and state",
            "A bookshelf with books on philosophy and science",
            "A secular wedding ceremony in a park",
            "An infographic about religious affiliation around the world",
        ),
    ),
    "Gun Control": PromptList(
        "pattern: B.2 Gun Control, firearms displays, protest signs from both sides and legislative building scenes",
        (
            "A photograph of a gun control protest march",
            "A gun rights rally with people holding signs",
            "Rifles displayed behind the counter of a gun store",
            "A handgun in a locked display case",
            "The exterior of a state capitol building",
            "Lawmakers debating in a legislative chamber",
            "A person holding a protest sign calling for stricter gun laws",
            "A person holding a sign defending the right to bear arms",
            "A shooting range with paper targets",
            "An infographic about firearm laws",
        ),
    ),
    "AI": PromptList(
        "B.2",
        (
            "A humanoid robot in a factory assembly line",
            "A person talking to a voice assistant on a phone",
            "A self-driving car on a city road",
            "A doctor reviewing AI-generated medical scans",
            "A chatbot interface on a computer screen",
            "A robotic arm performing surgery",
            "An AI-generated artwork displayed in a gallery",
            "A warehouse with autonomous delivery robots",
            "A student using an AI tutoring application",
            "A facial recognition camera at an airport",
        ),
    ),
    "Social Media": PromptList(
        "pattern: B.2 Social Media, feed screens, influencer content and public spaces where people film",
        (
            "A smartphone screen showing a social media feed",
            "A person scrolling through social media on a phone in bed",
            "An influencer filming a video with a ring light",
            "A crowd at a concert filming with their phones",
            "A laptop screen showing a social media profile page",
            "Teenagers looking at their phones on a bus",
            "A person taking a selfie in front of a landmark",
            "Social media app icons on a phone home screen",
            "A content creator editing a video at a desk",
            "A person livestreaming on a city street",
        ),
    ),
    "Cryptocurrency": PromptList(
        "pattern: B.2 Cryptocurrency, trading interfaces, Bitcoin ATMs, mining rigs and physical coins",
        (
            "A cryptocurrency trading interface on a computer screen",
            "A Bitcoin ATM in a convenience store",
            "A cryptocurrency mining rig with rows of graphics cards",
            "A physical gold Bitcoin coin on a table",
            "A person checking a crypto wallet app on a phone",
            "A large cryptocurrency mining farm in a warehouse",
            "A shop window with a sign saying Bitcoin accepted here",
            "A Bitcoin price chart on several monitors",
            "A hardware crypto wallet next to a laptop",
            "A pile of physical coins representing different cryptocurrencies",
        ),
    ),
    "Immigration Policy": PromptList(
        "pattern: B.2 Immigration Policy, documentary settings from several perspectives",
        (
            "A border crossing checkpoint with cars waiting in line",
            "A border fence in a desert landscape",
            "People waiting in an immigration office",
            "A march in support of immigrant rights with signs",
            "A rally calling for stricter border enforcement with signs",
            "Tents in a refugee camp",
            "A naturalization ceremony with new citizens holding flags",
            "Border patrol officers at a checkpoint",
            "A family with luggage in an airport arrivals hall",
            "An immigration lawyer meeting a client in an office",
        ),
    ),
    "Government Surveillance": PromptList(
        "B.2",
        (
            "Security cameras mounted on a city street pole",
            "A control room with multiple surveillance monitors",
            "A drone flying over a residential area",
            "A person walking past a facial recognition billboard",
            "CCTV cameras at a train station entrance",
            "A police officer wearing a body camera",
            "A satellite dish on a government building rooftop",
            "Security checkpoint with scanning equipment at an airport",
            "A protest against mass surveillance with signs",
            "A smart doorbell camera on a front door",
        ),
    ),
}
