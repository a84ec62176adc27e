"""Generated long conversations for the recall benchmark (:mod:`benchmarks.recall`).

Each :class:`Dialogue` is a two-person conversation over many sessions — the *user* and a
friend speaking as the *assistant* — with facts planted along the way and questions, asked
after the last session, that need them. Everything depends on ``(seed, number)`` alone
(``random.Random`` seeded with a string: the same on every machine and under every
``PYTHONHASHSEED``); nothing is downloaded.

**Shape.** A system prompt, then 16-28 sessions of 7-13 exchanges (a user message and the
assistant's reply): 250-700 messages, about 10,000-25,000 tokens (four characters per
token), so a 2,000-token recent window holds about a tenth of the conversation. A session
opens with a date marker (``[Session 7 · Saturday 14 May 2023, 18:40]``); sessions are 1-20
days apart. About one exchange in thirty has the assistant look something up with a tool
(an assistant message with a call, its result, then the answer), so windows can be
invalid.

**Small talk.** Most messages are small talk drawn from seventeen topics (weather,
cooking, work, television, gardening, sport, music, gadgets, travel memories, reading,
fitness, neighbours, weekend plans, money, errands, wildlife, family), each a set of
sentence templates over its own word lists, plus shared lists of adjectives, time phrases
and reactions: about a thousand distinct words over ten dialogues, 600-700 in each. A
session drifts between two to four topics. Small talk reuses the ordinary words of the
questions (live, city, work, car, name, friend, night, club...), so a question's words
alone do not single out its evidence.

**Facts.** Fifteen kinds (a sibling's city, a pet, an employer, a favourite dish, an
allergy, lessons on an instrument, a race time, an anniversary, a car, a trip in two parts,
a book, a friend's profession, a home, a child's age, a team). A dialogue plants 10-13 of
them, each owned by one speaker and stated by that speaker in the first person, mostly in
the first 60% of the sessions. Distractors come with them:

- the same kind of fact about the *other* speaker, with other values (``my brother moved to
  Porto`` beside ``my sister moved to Lisbon``), in half the cases;
- a third person's similar fact (``my colleague Ines relocated to Oslo``) for some kinds;
- casual mentions of the fact's name or entity in small talk;
- **updates**: half the facts that can change are restated later with a new value
  (a new city, employer, car, dish, home); the question's evidence is then the latest
  statement only.

**Questions.** One per planted fact, the latest user message, worded differently from the
statement: synonyms and paraphrase (``Which city does my sibling live in these days?``
for ``My sister Mara finally moved to Lisbon in March``), sometimes an indirect reference
by name (``Where did Mara end up living?``). ``my`` / ``your`` says whose fact is asked
about — a distinction a lexical ranking cannot see, which is what the distractors about the
other speaker test. :attr:`Question.evidence` holds the message indices of the statements
that answer it (two for the two-part trip, else one). Every message text is unique and no
evidence text occurs inside another message, so a window's evidence can be found by text
as well as by position.

>>> dialogue = generate_dialogue(0, seed=7)
>>> dialogue == generate_dialogue(0, seed=7)
True
>>> 250 <= len(dialogue.messages) <= 700, 10 <= len(dialogue.questions) <= 13
(True, True)
>>> question = dialogue.questions[0]
>>> all(dialogue.messages[i].role in ("user", "assistant") for i in question.evidence)
True
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from benchmarks.window_cases import Call, Case, Message, approximate_tokens

__all__ = [
    "KINDS",
    "Dialogue",
    "Kind",
    "Question",
    "generate_dialogue",
    "generate_dialogues",
    "kind",
    "load_locomo",
]


# -- word lists -------------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return text.split()


_FIRST = _words(
    """Mara Tomas Ines Jonas Lena Oskar Nadia Felix Priya Rafael Yuki Anselm Greta Milo
             Sofia Bruno Amara Emil Talia Hugo Leonie Caspar Noor Viktor Elif Matteo Freya Idris
             Clara Dario Esme Kofi Linnea Ravi Selma Teodor Una Wren Zaid Alma Benedikt Carys
             Dev Edda Florin Gaia Hamid Isla Joaquim Katya Lior Maeve Nico Ottilie Pavel Quinn
             Rosa Sami Thea Ulrich Vera Willem Ximena Yara Zoltan Agnes Bastian Cleo Dmitri
             Elodie Fabian Gwen Henrik Ilse Jasper Kira Lukas Mina"""
)
_CITIES = _words(
    """Lisbon Porto Oslo Bergen Krakow Gdansk Valencia Seville Lyon Marseille Turin
              Bologna Ghent Utrecht Leipzig Dresden Tallinn Riga Vilnius Ljubljana Zagreb Split
              Edinburgh Galway Cardiff Bristol Malmo Aarhus Tampere Graz Salzburg Basel Geneva
              Bilbao Toulouse Nantes Rotterdam Antwerp Hamburg Munich"""
)
_MONTHS = _words(
    """January February March April May June July August September October November
              December"""
)
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_COMPANIES = _words(
    """Northwind Brightline Halcyon Meridian Quillworks Stonebridge Tidewater
                 Evergreen Lumen Corvid Ironbark Saltmarsh Bluefin Copperleaf Harbourlight
                 Kestrel Moonrake Oakhaven Pinecrest Redwing Silverline Thornfield Windmere
                 Ashgrove Birchwood"""
)
_ROLES = [
    "data analyst",
    "product designer",
    "project manager",
    "backend engineer",
    "marketing lead",
    "sales director",
    "research scientist",
    "office manager",
    "copywriter",
    "quality inspector",
    "logistics planner",
    "financial controller",
]
_SPECIES = _words("puppy kitten parrot rabbit tortoise ferret hamster cockatiel")
_PET_NAMES = _words(
    """Biscuit Pepper Mochi Waffles Juniper Noodle Pickle Sprout Truffle Ziggy Clover
                 Marmalade Pretzel Basil Nutmeg Olive Gizmo Pumpkin Sable Tofu"""
)
_DISHES = [
    "mushroom risotto",
    "lamb tagine",
    "pad thai",
    "beef bourguignon",
    "shakshuka",
    "paella",
    "ramen",
    "moussaka",
    "chicken biryani",
    "gnocchi with sage butter",
    "fish tacos",
    "pierogi",
    "bibimbap",
    "goulash",
    "spanakopita",
    "pho",
    "lasagne",
    "green curry",
]
_ALLERGENS = [
    "peanuts",
    "shellfish",
    "sesame",
    "kiwi",
    "strawberries",
    "hazelnuts",
    "celery",
    "mustard seed",
]
_INSTRUMENTS = _words("cello saxophone piano violin trumpet ukulele drums harp")
_COLOURS = _words("red silver navy white green black yellow grey")
_CARS = ["Golf", "Corolla", "Civic", "Clio", "Octavia", "Polo", "Focus", "Yaris", "Model 3"]
_PLACES = [
    "the Azores",
    "Crete",
    "the Dolomites",
    "Iceland",
    "Sardinia",
    "the Faroe Islands",
    "Madeira",
    "the Lofoten Islands",
    "Sicily",
    "the Scottish Highlands",
    "Cappadocia",
    "the Algarve",
]
_TITLE_ADJ = _words("Quiet Hollow Silver Last Winter Salt Paper Hidden Glass Iron Distant")
_TITLE_NOUN = _words("Harbour Orchard Lantern Archive Meridian Tide Garden Cartographer Room")
_AUTHORS = _words(
    """Adichie Ishiguro Tokarczuk Ferrante Murakami Atwood Saunders Moshfegh Oyeyemi
               Krasznahorkai Yanagihara Mantel"""
)
_PROFESSIONS = [
    "paramedic",
    "architect",
    "veterinarian",
    "pilot",
    "sound engineer",
    "pastry chef",
    "geologist",
    "translator",
    "firefighter",
    "dentist",
    "carpenter",
    "journalist",
]
_STREETS = _words(
    """Elm Willow Mill Harbour Chapel Orchard Station Castle Bridge Meadow Church
               Victoria"""
)
_TEAMS = [
    "Riverside Rovers",
    "Northgate United",
    "the Harbour Hawks",
    "Eastfield Athletic",
    "the Valley Wolves",
    "Kingsport City",
    "the Lakeside Lions",
    "Westbrook Wanderers",
]
_RELATIONS = ["colleague", "neighbour", "cousin", "flatmate", "old teacher", "dentist"]

_ADJ = _words(
    """lovely strange busy quiet grey sunny odd calm hectic brilliant rough cosy lazy gloomy
           cheerful tiring decent weird bright chilly messy pleasant slow noisy soggy dreadful
           splendid mediocre peculiar chaotic serene dull lively bizarre gorgeous clumsy tedious
           delightful awkward sleepy frantic mellow soothing grim magnificent sluggish wholesome
           baffling crisp muggy breezy stuffy"""
)
_ERRANDS = _words(
    """batteries lightbulbs stamps envelopes shampoo detergent sponges candles matches
               plasters vitamins toothpaste umbrellas socks gloves scarves buttons thread glue
               tape scissors hangers coathooks doormats cushions curtains blankets pillows
               towels mugs saucepans colanders whisks ladles teapots corkscrews padlocks hinges
               screws nails paintbrushes sandpaper compost seedlings birdseed firewood charcoal"""
)
_ANIMALS = _words(
    """foxes magpies herons squirrels hedgehogs pigeons swans badgers seagulls crows
               ducks geese owls bats deer hares robins wrens sparrows starlings"""
)
_TIMES = [
    "this morning",
    "last night",
    "yesterday",
    "all week",
    "over the weekend",
    "earlier today",
    "on Tuesday",
    "lately",
    "since Sunday",
    "after lunch",
]
_REACTIONS = [
    "Ha, same here.",
    "Oh no, that sounds rough.",
    "That made me smile.",
    "Honestly, fair enough.",
    "I know exactly what you mean.",
    "Sounds like a good plan.",
    "Oh nice!",
    "Really? I had no idea.",
    "Classic.",
    "Good for you.",
    "Hmm, I'm not so sure about that.",
    "That's the spirit.",
]
_CHEERS = [
    "No way, congratulations!",
    "Oh, that's wonderful news.",
    "Wow, I did not see that coming.",
    "That's huge, well done!",
    "Oh how exciting.",
    "Amazing, tell me everything.",
    "Good news at last!",
]
_ASKS = [
    "What about you?",
    "How was your week?",
    "Anything new on your side?",
    "Any news?",
    "How are things with you?",
    "Tell me something good.",
]

_TOPICS: dict[str, tuple[list[str], dict[str, list[str]]]] = {
    "weather": (
        [
            "The {w} was {adj} {t}, I barely left the flat.",
            "They say the {w} will turn {adj} again by {day}.",
            "I got caught in the {w} on my way to the {place}.",
            "Our city has had nothing but {w} {t}, it is getting old.",
        ],
        {
            "w": _words("rain wind fog drizzle sunshine frost hail heat thunder snow sleet"),
            "place": ["bakery", "station", "office", "pharmacy", "market", "gym", "library"],
            "day": _WEEKDAYS,
        },
    ),
    "cooking": (
        [
            "I tried a new recipe with {ing} {t}, it came out {adj}.",
            "Dinner was {ing} and {ing2}, nothing fancy.",
            "I burnt the {ing} again, the smoke alarm went off twice.",
            "Do you ever cook with {ing}? I bought far too much of it.",
        ],
        {
            "ing": _words(
                """lentils chickpeas aubergine fennel leeks quinoa tofu spinach parsnips
                       couscous cabbage chorizo halloumi squash"""
            ),
            "ing2": _words("rice salad bread soup potatoes noodles polenta flatbread"),
        },
    ),
    "work": (
        [
            "Work was {adj} {t}, three {thing} in a row.",
            "My manager moved the {thing} deadline again.",
            "I spent the whole afternoon on {thing} that nobody will read.",
            "We had a {adj} offsite about {thing}, mostly slides.",
        ],
        {
            "thing": _words(
                """meetings reports spreadsheets budgets audits presentations invoices
                         interviews workshops reviews timesheets"""
            ),
        },
    ),
    "television": (
        [
            "We started a {genre} series {t}, the {part} was {adj}.",
            "Have you seen the new {genre} show everyone talks about?",
            "I fell asleep during the {part} of that {genre} film again.",
        ],
        {
            "genre": _words("crime detective sci-fi cooking nature baking comedy historical"),
            "part": ["ending", "pilot", "finale", "soundtrack", "second episode", "plot twist"],
        },
    ),
    "garden": (
        [
            "The {plant} on the balcony finally {grow}.",
            "Slugs ate half my {plant} {t}.",
            "I repotted the {plant}, fingers crossed it survives.",
        ],
        {
            "plant": _words("tomatoes basil roses lavender courgettes chillies mint geraniums"),
            "grow": ["flowered", "sprouted", "perked up", "gave up", "took off"],
        },
    ),
    "sport": (
        [
            "Did you catch the {game} {t}? The referee was {adj}.",
            "I watched some {game} highlights instead of sleeping.",
            "The local {game} club is looking for volunteers.",
        ],
        {"game": _words("tennis cricket rugby basketball cycling snooker volleyball hockey")},
    ),
    "music": (
        [
            "I have had that {style} song stuck in my head {t}.",
            "There is a {style} concert in the park next month.",
            "My neighbour practises {style} at odd hours, it is {adj}.",
        ],
        {"style": ["jazz", "folk", "techno", "opera", "reggae", "blues", "punk", "bossa nova"]},
    ),
    "gadgets": (
        [
            "My {device} stopped working {t}, typical.",
            "I finally updated the {device}, everything moved around.",
            "Is it worth buying a new {device} or should I wait?",
        ],
        {"device": _words("phone laptop kettle headphones printer router smartwatch toaster")},
    ),
    "memories": (
        [
            "That reminds me of the summer we spent near the {scenery}.",
            "I found old photos from the {scenery} trip, we looked so young.",
            "Remember the {adj} hostel by the {scenery}?",
        ],
        {"scenery": _words("lake coast mountains vineyard harbour forest border canal")},
    ),
    "reading": (
        [
            "I gave up on that {genre} book, too slow for me.",
            "The library has a {adj} new {genre} shelf.",
            "I keep buying {genre} books I never finish.",
        ],
        {"genre": ["poetry", "biography", "thriller", "fantasy", "travel", "essay", "history"]},
    ),
    "fitness": (
        [
            "I went for a {exercise} session {t} and my legs hate me.",
            "The gym changed the {exercise} timetable again.",
            "I'm trying to do {exercise} twice a week, we'll see.",
        ],
        {"exercise": ["yoga", "swimming", "spinning", "pilates", "rowing", "boxing", "climbing"]},
    ),
    "neighbours": (
        [
            "The people downstairs are renovating their {room}, so much drilling.",
            "Someone in our building left a {adj} note about the {room}.",
            "The landlord finally fixed the {room} door.",
        ],
        {"room": ["kitchen", "bathroom", "hallway", "cellar", "attic", "bike shed", "laundry"]},
    ),
    "weekend": (
        [
            "This weekend I mostly want to sleep and maybe visit the {spot}.",
            "We might go to the {spot} on {day} if it stays dry.",
            "Friends dragged me to a {adj} {spot} last night.",
        ],
        {
            "spot": ["flea market", "museum", "cinema", "karaoke bar", "farm shop", "street fair"],
            "day": _WEEKDAYS,
        },
    ),
    "money": (
        [
            "Prices at the {shop} are getting ridiculous.",
            "I cancelled two {service} subscriptions {t}.",
            "My {service} bill doubled, I need to call them.",
        ],
        {
            "shop": ["supermarket", "petrol station", "butcher", "pharmacy", "hardware store"],
            "service": ["streaming", "phone", "gym", "electricity", "insurance"],
        },
    ),
    "errands": (
        [
            "I ran out of {item} and {item2} {t}, so back to the shops.",
            "Why is it impossible to find decent {item} anywhere?",
            "The corner shop now sells {item}, {adj} but handy.",
        ],
        {"item": _ERRANDS, "item2": _ERRANDS},
    ),
    "wildlife": (
        [
            "There were {animal} in the courtyard {t}, {adj} sight.",
            "The {animal} by the canal are getting bold.",
            "I read that {animal} are back in the city parks.",
        ],
        {"animal": _ANIMALS},
    ),
    "family": (
        [
            "My {kin} called {t} to complain about {gripe}.",
            "We have a {adj} family lunch at my {kin}'s place soon.",
            "My {kin} keeps sending me articles about {gripe}.",
        ],
        {
            "kin": ["mum", "dad", "aunt", "uncle", "grandmother", "godfather"],
            "gripe": ["the neighbours", "politics", "the weather", "parking", "the prices"],
        },
    ),
}
_TOPIC_NAMES = tuple(_TOPICS)
_FILLERS = [
    "Anyway, how is life in your part of the city?",
    "I should really call my friend back, she left a long message.",
    "The new place near work does a decent breakfast.",
    "My car needs a wash, it looks abandoned.",
    "Not much news, work and sleep mostly.",
    "I keep forgetting names at parties, it is embarrassing.",
    "We stayed up too late last night talking about nothing.",
    "There is a new bakery at the corner, the queue is absurd.",
    "Live music at the pub on Friday, might go.",
    "The club down the road closed, end of an era.",
]


# -- facts ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of fact: how it is stated, updated, mimicked and asked about.

    Templates use the values of :attr:`values` (``{name}``, ``{city}``...); question
    templates also ``{poss}`` (my / your), ``{subj}`` (I / you), ``{obj}`` (me / you) and
    ``{be}`` (am / are), from the asker's side.
    """

    name: str
    values: Callable[[random.Random], dict[str, str]]
    statements: tuple[str, ...]
    questions: tuple[str, ...]
    updates: tuple[str, ...] = ()
    """Restatements with a new value (the keys suffixed with ``2``); empty: never updated."""
    second: tuple[str, ...] = ()
    """A second part stated in a later session (both are the evidence)."""
    third: tuple[str, ...] = ()
    """A third person's similar fact (a distractor)."""
    mentions: tuple[str, ...] = ()
    """A casual mention of the fact's entity in small talk (a distractor)."""


def _pick(rng: random.Random, options: Sequence[str]) -> str:
    return options[rng.randrange(len(options))]


def _sibling(rng: random.Random) -> dict[str, str]:
    rel = _pick(rng, ["sister", "brother"])
    return {
        "rel": rel,
        "pron": "she" if rel == "sister" else "he",
        "name": _pick(rng, _FIRST),
        "city": _pick(rng, _CITIES),
        "month": _pick(rng, _MONTHS),
        "city2": _pick(rng, _CITIES),
    }


KINDS: tuple[Kind, ...] = (
    Kind(
        "sibling city",
        _sibling,
        (
            "My {rel} {name} finally moved to {city} in {month}, {pron} is thrilled with the "
            "new flat.",
            "Did I tell you? {name}, my younger {rel}, relocated to {city} back in {month}.",
        ),
        (
            "Which city does {poss} sibling live in these days?",
            "Remind me, where is {poss} {rel} based at the moment?",
            "Where did {name} end up settling?",
            "Where did {poss} {rel} move to?",
        ),
        updates=("Update on {name}: {pron} left {city} and has a place in {city2} now.",),
        third=("My {other_rel} {other}'s {rel} just relocated to {city2} as well.",),
        mentions=("{name} sent me a voice note {time}, mostly about nothing.",),
    ),
    Kind(
        "pet",
        lambda rng: {"species": _pick(rng, _SPECIES), "pet": _pick(rng, _PET_NAMES)},
        (
            "We adopted a {species} last weekend and called it {pet}.",
            "Meet the newest member of the household: a little {species} named {pet}.",
        ),
        (
            "What is {poss} new animal companion called?",
            "What name did {subj} give the creature {subj} took home?",
            "What did {subj} call the {species}?",
        ),
        mentions=("{pet} chewed through a charger cable {time}.",),
    ),
    Kind(
        "employer",
        lambda rng: {
            "company": _pick(rng, _COMPANIES),
            "role": _pick(rng, _ROLES),
            "company2": _pick(rng, _COMPANIES),
            "role2": _pick(rng, _ROLES),
        },
        (
            "I accepted an offer at {company} as a {role}, I start next month.",
            "Signed the contract today: {role} at {company}!",
        ),
        (
            "Which firm pays {poss} salary nowadays?",
            "Who is {poss} employer at present, and in what position?",
            "Which company made {obj} an offer, and for what role?",
        ),
        updates=("Plot twist: I quit {company} and joined {company2} as a {role2}.",),
        third=("My {other_rel} {other} got hired by {company2} too.",),
    ),
    Kind(
        "favourite dish",
        lambda rng: {"dish": _pick(rng, _DISHES), "dish2": _pick(rng, _DISHES)},
        (
            "Honestly, {dish} is my all-time favourite, I could eat it every single week.",
            "If I could only eat one thing forever it would be {dish}.",
        ),
        (
            "What meal would make {obj} happiest if {subj} had to pick just one?",
            "Which plate of food should we prepare to spoil {obj}?",
            "What is {poss} favourite food?",
        ),
        updates=("I've gone off {dish} lately, these days {dish2} is what I crave.",),
    ),
    Kind(
        "allergy",
        lambda rng: {"allergen": _pick(rng, _ALLERGENS)},
        (
            "The doctor confirmed I'm allergic to {allergen}, so no more of that for me.",
            "Turns out my itchy throat was an allergy to {allergen}, who knew.",
        ),
        (
            "Which ingredient must {subj} stay away from for health reasons?",
            "What triggers a bad reaction in {obj} at the dinner table?",
            "What {be} {subj} allergic to?",
        ),
        third=("My {other_rel} {other} can't go near {allergen} either.",),
    ),
    Kind(
        "instrument",
        lambda rng: {"instrument": _pick(rng, _INSTRUMENTS), "weekday": _pick(rng, _WEEKDAYS)},
        (
            "I signed up for {instrument} lessons, every {weekday} evening with a teacher "
            "downtown.",
            "Guess who is learning the {instrument}? Classes on {weekday}s, wish me luck.",
        ),
        (
            "What {be} {subj} learning to play, and on which day are the classes?",
            "Which musical skill {be} {subj} picking up this year?",
            "Which lessons {be} {subj} taking, and when?",
        ),
    ),
    Kind(
        "race time",
        lambda rng: {"city": _pick(rng, _CITIES), "minutes": str(rng.randint(88, 160))},
        (
            "I ran the {city} half marathon and finished in {minutes} minutes!",
            "Crossed the line at the {city} half marathon after {minutes} minutes, legs are dead.",
        ),
        (
            "How long did that long-distance running event take {obj}?",
            "What was {poss} time in the race?",
            "How fast did {subj} run the half marathon?",
        ),
        third=("My {other_rel} {other} did the {city} half marathon in {minutes2} minutes.",),
    ),
    Kind(
        "anniversary",
        lambda rng: {
            "partner": _pick(rng, _FIRST),
            "day": str(rng.randint(1, 28)),
            "month": _pick(rng, _MONTHS),
        },
        (
            "{partner} and I celebrate our anniversary on {day} {month} every year.",
            "Our anniversary is {day} {month}, {partner} always books the same restaurant.",
        ),
        (
            "On what date do {poss} partner and {subj} mark the day {subj} got together?",
            "When is the yearly special day for {obj} and {poss} other half?",
            "When is {poss} anniversary?",
        ),
        mentions=("{partner} says hi, by the way.",),
    ),
    Kind(
        "car",
        lambda rng: {
            "colour": _pick(rng, _COLOURS),
            "model": _pick(rng, _CARS),
            "colour2": _pick(rng, _COLOURS),
            "model2": _pick(rng, _CARS),
        },
        (
            "I finally bought a car, a {colour} {model}, second hand but spotless.",
            "Picked up my new wheels today: a {colour} {model}.",
        ),
        (
            "What vehicle do {subj} drive at the moment?",
            "What kind of automobile {be} {subj} getting around in?",
            "Which car did {subj} buy?",
        ),
        updates=("I sold the {model} and got a {colour2} {model2} instead.",),
    ),
    Kind(
        "trip",
        lambda rng: {
            "place": _pick(rng, _PLACES),
            "month": _pick(rng, _MONTHS),
            "nights": str(rng.randint(3, 14)),
        },
        (
            "We booked a trip to {place} for {month}, I can't wait.",
            "Holiday plans are set: {place} in {month}.",
        ),
        (
            "How many nights will {subj} be away on the {month} getaway, and where to?",
            "How many nights is {poss} holiday, and where?",
        ),
        second=(
            "The holiday is all sorted now: {nights} nights, flying out at dawn.",
            "Final details for the holiday: {nights} nights, hotel already paid.",
        ),
    ),
    Kind(
        "book",
        lambda rng: {
            "title": f"The {_pick(rng, _TITLE_ADJ)} {_pick(rng, _TITLE_NOUN)}",
            "author": _pick(rng, _AUTHORS),
        },
        (
            "I'm halfway through '{title}' by {author}, can't put it down.",
            "Currently reading '{title}', {author} at their best.",
        ),
        (
            "Which novel has {obj} hooked right now, and who wrote it?",
            "What {be} {subj} reading before bed these days?",
            "Which book {be} {subj} reading?",
        ),
    ),
    Kind(
        "friend",
        lambda rng: {"friend": _pick(rng, _FIRST), "profession": _pick(rng, _PROFESSIONS)},
        (
            "My best friend from school, {friend}, works as a {profession} now.",
            "{friend}, my oldest friend, retrained and is a {profession} these days.",
        ),
        (
            "What does {poss} closest childhood pal do for a living?",
            "What is {friend}'s job?",
            "What does {poss} best friend from school do?",
        ),
        third=("My {other_rel} {other} is a {profession2}, long shifts.",),
        mentions=("Had coffee with {friend} {time}, we laughed a lot.",),
    ),
    Kind(
        "home",
        lambda rng: {
            "rooms": str(rng.randint(1, 5)),
            "street": _pick(rng, _STREETS),
            "rooms2": str(rng.randint(1, 5)),
            "street2": _pick(rng, _STREETS),
        },
        (
            "We moved into a {rooms}-bedroom house on {street} Street.",
            "The keys are ours: {rooms} bedrooms, {street} Street, a tiny garden.",
        ),
        (
            "How many rooms for sleeping does {poss} place have, and on which road?",
            "Where {be} {subj} living now, and how big is it?",
            "How many bedrooms does {poss} house have?",
        ),
        updates=("We moved again! A {rooms2}-bedroom flat on {street2} Street this time.",),
    ),
    Kind(
        "child age",
        lambda rng: {"child": _pick(rng, _FIRST), "age": str(rng.randint(3, 12))},
        (
            "My daughter {child} turned {age} last week, we threw a party in the park.",
            "Can you believe {child}, my daughter, is {age} already?",
        ),
        (
            "How old is {poss} little girl now?",
            "What age is {child}?",
            "How old is {poss} daughter?",
        ),
        mentions=("{child} has a school play coming up.",),
    ),
    Kind(
        "team",
        lambda rng: {"team": _pick(rng, _TEAMS), "team2": _pick(rng, _TEAMS)},
        (
            "I've supported {team} since I was a kid, never missed a derby.",
            "Season tickets renewed, {team} forever.",
        ),
        (
            "Which club do {subj} cheer for?",
            "Who do {subj} root for when the league is on?",
            "Which team have {subj} supported since childhood?",
        ),
        third=("My {other_rel} {other} follows {team2}, we argue every weekend.",),
    ),
)
"""Every kind of fact, in the order a dialogue considers them."""

_BY_NAME = {kind.name: kind for kind in KINDS}


# -- the dialogue ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Question:
    """A question asked after the last session (the latest user message) and the message
    indices of the statements that answer it."""

    text: str
    evidence: tuple[int, ...]
    kind: str
    owner: str
    """Whose fact it is: ``user`` or ``assistant``."""
    updated: bool
    """The fact was restated with a new value: the evidence is the latest statement."""
    statements: tuple[str, ...]
    """The planted statement behind each evidence index (each inside its message)."""
    stale: tuple[int, ...] = ()
    """The superseded statement of an updated fact (not evidence: a distractor)."""


@dataclass(frozen=True, slots=True)
class Dialogue:
    """One generated conversation (``messages``; the system prompt first), the first
    message of each session and the questions asked after it."""

    number: int
    messages: tuple[Message, ...]
    sessions: tuple[int, ...]
    questions: tuple[Question, ...]

    @property
    def name(self) -> str:
        return f"dialogue #{self.number}"

    def case(self) -> Case:
        """The conversation as a :class:`~benchmarks.window_cases.Case` (for its
        LangChain / LlamaIndex conversions; the budget is not used)."""
        return Case("recall", self.number, self.messages, budget=0, call_style="openai")

    def tokens(self) -> int:
        """The conversation's size, four characters per token."""
        return sum(approximate_tokens(m) for m in self.messages)


@dataclass
class _Event:
    """A message to place: spoken by ``speaker`` in session ``session``."""

    session: int
    speaker: str
    text: str
    fact: int = -1  # the planted fact it states (-1: a distractor)
    part: int = 0  # 0: the statement, 1: an update, 2: a trip's second part


class _Writer:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.messages: list[Message] = []
        self.texts: set[str] = set()
        self.calls = 0

    def sentence(self, topic: str) -> str:
        rng = self.rng
        templates, slots = _TOPICS[topic]
        values = {key: _pick(rng, options) for key, options in slots.items()}
        values["adj"] = _pick(rng, _ADJ)
        values["t"] = _pick(rng, _TIMES)
        return _pick(rng, templates).format(**values)

    def small_talk(self, topics: Sequence[str], sentences: int) -> str:
        rng = self.rng
        parts = []
        for _ in range(sentences):
            if rng.random() < 0.12:
                parts.append(_pick(rng, _FILLERS))
            else:
                parts.append(self.sentence(_pick(rng, topics)))
        return " ".join(parts)

    def unique(self, text: str, topics: Sequence[str]) -> str:
        """``text``, lengthened by small talk until no other message has it."""
        while text in self.texts:
            text = f"{text} {self.sentence(_pick(self.rng, topics))}"
        self.texts.add(text)
        return text

    def add(self, role: str, text: str, topics: Sequence[str], **extra: object) -> int:
        text = self.unique(text, topics)
        self.messages.append(Message(role, text, **extra))  # type: ignore[arg-type]
        return len(self.messages) - 1

    def tool_round(self, topics: Sequence[str]) -> None:
        """The assistant looks something up: a call, its result, then the answer."""
        rng = self.rng
        self.calls += 1
        topic = _pick(rng, topics)
        tool = _pick(rng, ["web_search", "weather", "calendar", "maps"])
        query = self.sentence(topic)[:48]
        call = Call(f"call_{self.calls}", tool, {"query": query})
        self.add("assistant", f"Let me check that with {tool}.", topics, calls=(call,))
        result = f"{tool} result: {self.small_talk(topics, 2)}"
        self.add("tool", result, topics, answers=call.id)


def _date_marker(number: int, when: date, rng: random.Random) -> str:
    clock = f"{rng.randint(7, 22):02d}:{rng.choice([0, 10, 15, 20, 30, 40, 45, 50]):02d}"
    day = f"{_WEEKDAYS[when.weekday()]} {when.day} {_MONTHS[when.month - 1]} {when.year}"
    return f"[Session {number + 1} · {day}, {clock}]"


def _fill(template: str, values: dict[str, str]) -> str:
    return template.format(**values)


def generate_dialogue(number: int, *, seed: int) -> Dialogue:
    """The dialogue ``number`` of ``seed`` (see the module docstring)."""
    rng = random.Random(f"recall:{seed}:{number}")
    user_name, friend_name = rng.sample(_FIRST, 2)
    n_sessions = rng.randint(16, 28)
    early = max(2, int(n_sessions * 0.6))
    events: list[_Event] = []
    facts: list[tuple[Kind, str, dict[str, str]]] = []  # kind, owner, values
    chosen = rng.sample(KINDS, rng.randint(10, 13))
    for kind in chosen:
        owner = _pick(rng, ["user", "assistant"])
        other = "assistant" if owner == "user" else "user"
        values = kind.values(rng)
        while {user_name, friend_name} & set(values.values()):  # not a speaker's name
            values = kind.values(rng)
        values.update(
            other=_pick(rng, [n for n in _FIRST if n not in (user_name, friend_name)]),
            other_rel=_pick(rng, _RELATIONS),
            time=_pick(rng, _TIMES),
            minutes2=str(rng.randint(88, 160)),
            profession2=_pick(rng, _PROFESSIONS),
        )
        index = len(facts)
        facts.append((kind, owner, values))
        # mostly early; one fact in six anywhere (the recent window's share)
        start = rng.randrange(early) if rng.random() < 0.84 else rng.randrange(n_sessions)
        events.append(_Event(start, owner, _fill(_pick(rng, kind.statements), values), index))
        if kind.second:
            later = rng.randint(min(start + 1, n_sessions - 1), n_sessions - 1)
            text = _fill(_pick(rng, kind.second), values)
            events.append(_Event(later, owner, text, index, part=2))
        if kind.updates and start < n_sessions - 2 and rng.random() < 0.5:
            later = rng.randint(start + 1, n_sessions - 1)
            text = _fill(_pick(rng, kind.updates), values)
            events.append(_Event(later, owner, text, index, part=1))
        if rng.random() < 0.5:  # the same kind of fact about the other speaker
            mimic = kind.values(rng)
            mimic.update({k: v for k, v in values.items() if k not in mimic})
            text = _fill(_pick(rng, kind.statements), mimic)
            events.append(_Event(rng.randrange(n_sessions), other, text))
        if kind.third and rng.random() < 0.7:
            text = _fill(_pick(rng, kind.third), values)
            events.append(
                _Event(rng.randrange(n_sessions), _pick(rng, ["user", "assistant"]), text)
            )
        for _ in range(rng.randint(0, 2) if kind.mentions else 0):
            text = _fill(_pick(rng, kind.mentions), values)
            events.append(_Event(rng.randrange(n_sessions), owner, text))

    writer = _Writer(rng)
    system = (
        f"You are {friend_name}, chatting with your old friend {user_name} across many "
        f"sessions. Answer questions from what the two of you said."
    )
    writer.add("system", system, _TOPIC_NAMES)
    sessions: list[int] = []
    stated: dict[tuple[int, int], tuple[int, str]] = {}  # (fact, part) -> (message, text)
    when = date(2022, 1, 3) + timedelta(days=rng.randrange(500))
    for s in range(n_sessions):
        topics = rng.sample(_TOPIC_NAMES, rng.randint(2, 4))
        exchanges = rng.randint(7, 13)
        mine = [e for e in events if e.session == s]
        # each event takes an exchange: its speaker's message there
        slots = rng.sample(range(exchanges), min(len(mine), exchanges))
        placed = dict(zip(slots, mine, strict=False))
        extra = mine[len(slots) :]  # more events than exchanges: appended as exchanges
        for e in extra:
            placed[exchanges] = e
            exchanges += 1
        sessions.append(len(writer.messages))
        for x in range(exchanges):
            event = placed.get(x)
            user_text = writer.small_talk(topics, rng.randint(1, 3))
            if event is not None and event.speaker == "user":
                lead = writer.small_talk(topics, 1) + " " if rng.random() < 0.4 else ""
                user_text = lead + event.text
            elif event is not None and rng.random() < 0.5:
                user_text = f"{user_text} {_pick(rng, _ASKS)}"
            if x == 0:
                user_text = f"{_date_marker(s, when, rng)} {user_text}"
            at = writer.add("user", user_text, topics)
            if event is not None and event.speaker == "user" and event.fact >= 0:
                stated[(event.fact, event.part)] = (at, event.text)
            if event is None and rng.random() < 1 / 30:
                writer.tool_round(topics)
            if event is not None and event.speaker == "assistant":
                opener = _pick(rng, _REACTIONS) + " " if rng.random() < 0.5 else ""
                reply = opener + event.text
            elif event is not None and event.fact >= 0:
                reply = f"{_pick(rng, _CHEERS)} {writer.small_talk(topics, 1)}"
            else:
                reply = f"{_pick(rng, _REACTIONS)} {writer.small_talk(topics, rng.randint(1, 3))}"
            at = writer.add("assistant", reply, topics)
            if event is not None and event.speaker == "assistant" and event.fact >= 0:
                stated[(event.fact, event.part)] = (at, event.text)
        when += timedelta(days=rng.randint(1, 20))

    questions: list[Question] = []
    for index, (kind, owner, values) in enumerate(facts):
        updated = (index, 1) in stated
        evidence = [stated[(index, 1) if updated else (index, 0)]]
        if (index, 2) in stated:
            evidence.append(stated[(index, 2)])
        evidence.sort()
        stale = (stated[(index, 0)][0],) if updated else ()
        side = (
            {"poss": "my", "subj": "I", "obj": "me", "be": "am"}
            if owner == "user"
            else {"poss": "your", "subj": "you", "obj": "you", "be": "are"}
        )
        text = _fill(_pick(rng, kind.questions), {**values, **side})
        text = text[0].upper() + text[1:]
        questions.append(
            Question(
                text,
                tuple(at for at, _ in evidence),
                kind.name,
                owner,
                updated,
                tuple(said for _, said in evidence),
                stale,
            )
        )
    return Dialogue(number, tuple(writer.messages), tuple(sessions), tuple(questions))


def generate_dialogues(count: int, *, seed: int) -> list[Dialogue]:
    """Dialogues ``0 .. count - 1`` of ``seed`` (each depends on its number alone)."""
    return [generate_dialogue(number, seed=seed) for number in range(count)]


def kind(name: str) -> Kind:
    """The kind of fact called ``name``."""
    return _BY_NAME[name]


# -- public data: LoCoMo -------------------------------------------------------------------------
ADVERSARIAL = 5
"""LoCoMo's adversarial category: questions about what was never said (their evidence is
a near miss, not an answer), skipped."""
_TURN_ID = re.compile(r"D(\d+):(\d+)")


def load_locomo(path: Path) -> list[Dialogue]:
    """The conversations of a LoCoMo file (``locomo10.json`` of snap-research/locomo: a list
    of samples, each with ``conversation`` — ``speaker_a``, ``speaker_b``, ``session_<n>``
    lists of turns ``{speaker, dia_id, text[, blip_caption]}`` and ``session_<n>_date_time``
    — and ``qa``: ``{question, evidence: ["D<session>:<turn>", ...], category}``) as
    :class:`Dialogue` s: a system prompt, then every turn in session order as one message,
    ``speaker_a``'s as the user's and ``speaker_b``'s as the assistant's, the first of each
    session opening with its date (``[Session 2 · 1:14 pm on 25 May, 2023]``), a shared
    image as LoCoMo's own prompts give it (`` [shares <caption>]``). A text said twice gets
    its turn id appended (windows are mapped back by text). Questions of the adversarial
    category, and questions none of whose evidence ids names a turn, are left out; ids
    naming no turn are dropped from a question's evidence.
    """
    try:
        samples = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(samples, list):
            raise TypeError("the top level is not a list of samples")
        return [_locomo_dialogue(number, sample) for number, sample in enumerate(samples)]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(
            f"{path} is not a LoCoMo file (a list of samples with 'conversation' and 'qa'): "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _locomo_dialogue(number: int, sample: dict[str, Any]) -> Dialogue:
    talk = sample["conversation"]
    user, friend = talk["speaker_a"], talk["speaker_b"]
    system = f"You are {friend}, chatting with your friend {user} across many sessions."
    messages = [Message("system", system)]
    sessions: list[int] = []
    at: dict[tuple[int, int], int] = {}  # (session, turn) of a dia_id -> message index
    seen: set[str] = {system}
    found = (int(key.split("_")[1]) for key in talk if re.fullmatch(r"session_\d+", key))
    for session in sorted(found):
        sessions.append(len(messages))
        when = talk.get(f"session_{session}_date_time", "")
        for position, turn in enumerate(talk[f"session_{session}"]):
            text = str(turn["text"])
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            if position == 0:
                text = f"[Session {session} · {when}] {text}"
            if text in seen:
                text += f" [{turn['dia_id']}]"
            seen.add(text)
            for ids in _TURN_ID.findall(str(turn["dia_id"])):
                at[int(ids[0]), int(ids[1])] = len(messages)
            role = "user" if turn["speaker"] == user else "assistant"
            messages.append(Message(role, text))
    questions: list[Question] = []
    for qa in sample["qa"]:
        if qa.get("category") == ADVERSARIAL:
            continue
        ids = _TURN_ID.findall(" ".join(map(str, qa.get("evidence") or [])))
        evidence = sorted({at[key] for s, t in ids if (key := (int(s), int(t))) in at})
        if evidence:
            statements = tuple(messages[i].text for i in evidence)
            kind = f"category {qa.get('category')}"
            questions.append(
                Question(str(qa["question"]), tuple(evidence), kind, "", False, statements)
            )
    return Dialogue(number, tuple(messages), tuple(sessions), tuple(questions))
