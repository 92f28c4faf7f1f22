"""The demo's knowledge base: short passages about Marrowick, a harbour town invented
for this project (every fact is made up, so neither the scripted model nor a judge
can lean on world knowledge), and questions each answerable from one passage."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Passage:
    id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class DemoQuestion:
    text: str
    passage_id: str


PASSAGES: tuple[Passage, ...] = (
    Passage("founding", "Founding of Marrowick",
            "Marrowick was founded in 1642 by the salt merchant Edda Corrin. She chose the "
            "sheltered bay because its sandbar broke the winter storms. The first settlement "
            "had eleven timber houses."),
    Passage("lighthouse", "Gull Point Lighthouse",
            "The Gull Point Lighthouse was completed in 1811 and stands 38 metres tall. Its "
            "lamp was designed by the engineer Tobias Wrenfield. The light can be seen from "
            "29 kilometres out at sea."),
    Passage("bridge", "Saltmarsh Bridge",
            "The Saltmarsh Bridge opened in 1897 and joins the old town to the Fennick "
            "quarter. It has seven stone arches and is 214 metres long. The architect was "
            "Harriet Oldcastle."),
    Passage("festival", "Lantern Festival",
            "The Lantern Festival is held every year on the second Saturday of October. It "
            "began in 1923 to honour fishermen lost at sea. About 4,000 paper lanterns are "
            "floated on the harbour each year."),
    Passage("library", "Corrin Library",
            "The Corrin Library opened in 1868 with a gift from the shipowner Abel Fairhurst. "
            "It holds roughly 92,000 books and a collection of 300 sea charts. The reading "
            "room has a domed glass roof."),
    Passage("railway", "Marrowick Railway",
            "The railway reached Marrowick in 1854, linking it to the inland city of Dunmere. "
            "The journey took four hours by steam train and now takes 55 minutes. The "
            "station was designed by Lionel Ashgrove."),
    Passage("fishing", "Herring Fleet",
            "At its peak in 1880 the Marrowick herring fleet counted 160 boats. The catch was "
            "salted in barrels and shipped to Dunmere by rail. The fleet shrank after the "
            "herring moved north in the 1930s."),
    Passage("school", "Bellweather School",
            "Bellweather School was founded in 1779 by the teacher Miriam Hale. It began with "
            "twenty pupils in a converted sail loft. Today it teaches about 850 students."),
    Passage("market", "Fish Market",
            "The covered fish market on Quay Street opens at five in the morning. Its iron "
            "roof was built in 1902 and covers 2,400 square metres. Traders sell mackerel, "
            "crab and smoked eel."),
    Passage("mayor", "First Mayor",
            "The first elected mayor of Marrowick was Josiah Penhallow, who took office in "
            "1836. He paved the harbour road and built the first public well. He served for "
            "nine years."),
    Passage("river", "River Lisk",
            "The River Lisk flows 63 kilometres from the Cobble Hills to Marrowick bay. Its "
            "estuary is home to about 3,000 wintering geese. Otters returned to the river in "
            "2009."),
    Passage("museum", "Maritime Museum",
            "The Marrowick Maritime Museum opened in 1951 in a former customs house. Its "
            "best-known exhibit is the figurehead of the clipper Blue Heron. The museum "
            "receives around 60,000 visitors a year."),
    Passage("football", "Marrowick Rovers",
            "Marrowick Rovers football club was formed in 1889 by dock workers. The team "
            "plays in green and white at Tidemill Park, which seats 6,500 people. The club "
            "won the county cup in 1924."),
    Passage("bakery", "Penrose Bakery",
            "Penrose Bakery has made saffron buns on Mill Lane since 1795. The bakery is run "
            "by the seventh generation of the Penrose family. It bakes about 1,200 buns on a "
            "busy day."),
    Passage("observatory", "Cliff Observatory",
            "The Cliff Observatory was built in 1884 by the astronomer Clara Voss. Its main "
            "telescope has a lens 41 centimetres wide. Voss discovered the comet that bears "
            "her name from this site in 1890."),
    Passage("ferry", "Island Ferry",
            "A ferry runs from Marrowick to the island of Skarra four times a day. The "
            "crossing is 18 kilometres long and takes 70 minutes. The current ship, the "
            "Morwenna, entered service in 2015."),
    Passage("flood", "Great Flood",
            "The great flood of 1953 put the lower town under two metres of water. A storm "
            "surge broke the old sea wall on the night of 31 January. A new wall, 6 metres "
            "high, was finished in 1960."),
    Passage("windfarm", "Offshore Wind Farm",
            "The Skarra Bank wind farm has 48 turbines and lies 12 kilometres off the coast. "
            "It started producing power in 2018. The farm supplies electricity for about "
            "90,000 homes."),
    Passage("choir", "Harbour Choir",
            "The Harbour Choir was started in 1906 by the organist Peter Lusk. It has about "
            "70 singers and rehearses in St Brannoc's Church. The choir sings sea songs at "
            "the Lantern Festival."),
    Passage("hospital", "Alder Hospital",
            "Alder Hospital opened in 1912 with 40 beds, paid for by a public subscription. "
            "Its first matron was Agnes Thorne. The hospital now has 320 beds and a "
            "helicopter pad."),
    Passage("university", "Marrowick College",
            "Marrowick College was founded in 1963 as a school of marine science. Marrowick "
            "College became a university in 1992. About 7,400 students study there, many of "
            "them oceanography."),
    Passage("cheese", "Skarra Blue Cheese",
            "Skarra Blue is a cheese made from sheep's milk on the island of Skarra. Each "
            "wheel is aged for five months in sea caves. The recipe was written down by "
            "Hilda Marsh in 1871."),
    Passage("garden", "Botanic Garden",
            "The Marrowick Botanic Garden covers 9 hectares on the south hill. It was laid "
            "out in 1846 by the gardener Samuel Reed. Its glasshouse grows more than 500 "
            "kinds of fern."),
    Passage("tram", "Harbour Tram",
            "An electric tram ran along the harbour front from 1901 until 1956. The line was "
            "3 kilometres long and had 14 stops. One restored tram car now stands outside "
            "the museum."),
    Passage("clocktower", "Clock Tower",
            "The clock tower in Market Square was raised in 1874 to mark fifty years of the "
            "town council. It is 31 metres tall and its bell weighs two tonnes. The clock "
            "was made by the firm of Gideon Pell."),
    Passage("newspaper", "Marrowick Courier",
            "The Marrowick Courier was founded in 1819 by the printer Nathaniel Brisk. It began "
            "as a weekly sheet and became a daily paper in 1888."),
    Passage("shipyard", "Corrin Shipyard",
            "The Corrin Shipyard built 412 ships between 1760 and 1968. Its largest launch was "
            "the steamer Albatross, 96 metres long. The yard closed when the last order was "
            "cancelled."),
    Passage("cathedral", "St Brannoc's Church",
            "St Brannoc's Church was built of grey granite in 1488. Its spire was struck by "
            "lightning in 1703 and rebuilt a year later. The church has a peal of eight bells."),
    Passage("climate", "Climate",
            "Marrowick has a mild sea climate. The average temperature in July is 17 degrees "
            "and in January 6 degrees. About 1,100 millimetres of rain fall each year."),
    Passage("population", "Population",
            "Marrowick had 48,200 inhabitants at the 2021 census. The population peaked at "
            "55,000 in 1961 when the shipyard was busiest. About one person in six was born "
            "outside the county."),
    Passage("castle", "Dunlin Castle",
            "Dunlin Castle stands on a rock at the mouth of the bay. It was built in 1540 to "
            "guard the harbour against raiders. Its walls are 4 metres thick."),
    Passage("twin", "Twin Town",
            "Marrowick has been twinned with the Breton port of Kerlouan since 1972. Every "
            "summer 30 pupils from each town swap places for two weeks. The link was "
            "proposed by the councillor Edith Varne."),
)

QUESTIONS: tuple[DemoQuestion, ...] = (
    DemoQuestion("When was Marrowick founded and by whom?", "founding"),
    DemoQuestion("How tall is the Gull Point Lighthouse?", "lighthouse"),
    DemoQuestion("Who designed the lamp of the Gull Point Lighthouse?", "lighthouse"),
    DemoQuestion("How many arches does the Saltmarsh Bridge have?", "bridge"),
    DemoQuestion("When did the Saltmarsh Bridge open?", "bridge"),
    DemoQuestion("When is the Lantern Festival held?", "festival"),
    DemoQuestion("How many lanterns are floated during the Lantern Festival?", "festival"),
    DemoQuestion("How many books does the Corrin Library hold?", "library"),
    DemoQuestion("When did the railway reach Marrowick?", "railway"),
    DemoQuestion("How many boats did the herring fleet count at its peak?", "fishing"),
    DemoQuestion("Who founded Bellweather School?", "school"),
    DemoQuestion("When does the fish market on Quay Street open?", "market"),
    DemoQuestion("Who was the first elected mayor of Marrowick?", "mayor"),
    DemoQuestion("How long is the River Lisk?", "river"),
    DemoQuestion("When did otters return to the River Lisk?", "river"),
    DemoQuestion("How many visitors does the Maritime Museum receive?", "museum"),
    DemoQuestion("When was Marrowick Rovers football club formed?", "football"),
    DemoQuestion("How many people does Tidemill Park seat?", "football"),
    DemoQuestion("Since when has Penrose Bakery made saffron buns?", "bakery"),
    DemoQuestion("Who built the Cliff Observatory?", "observatory"),
    DemoQuestion("How long does the ferry crossing to Skarra take?", "ferry"),
    DemoQuestion("How deep was the water in the lower town during the great flood?", "flood"),
    DemoQuestion("How many turbines does the Skarra Bank wind farm have?", "windfarm"),
    DemoQuestion("Who started the Harbour Choir?", "choir"),
    DemoQuestion("How many beds did Alder Hospital have when it opened?", "hospital"),
    DemoQuestion("When did Marrowick College become a university?", "university"),
    DemoQuestion("How long is each wheel of the cheese aged in the sea caves?", "cheese"),
    DemoQuestion("Who laid out the Marrowick Botanic Garden?", "garden"),
    DemoQuestion("When did the harbour tram stop running?", "tram"),
    DemoQuestion("How much does the bell of the clock tower weigh?", "clocktower"),
    DemoQuestion("Who founded the Marrowick Courier?", "newspaper"),
    DemoQuestion("How many ships did the Corrin Shipyard build?", "shipyard"),
    DemoQuestion("When was the spire of St Brannoc's Church struck by lightning?", "cathedral"),
    DemoQuestion("How much rain falls in Marrowick each year?", "climate"),
    DemoQuestion("How many inhabitants did Marrowick have at the 2021 census?", "population"),
    DemoQuestion("How thick are the walls of Dunlin Castle?", "castle"),
    DemoQuestion("Which town is Marrowick twinned with?", "twin"),
    DemoQuestion("Who designed Marrowick railway station?", "railway"),
)

# Proper names in the corpus, by kind: the scripted model swaps one for another of the
# same kind to hallucinate a fluent but wrong answer.
PEOPLE: tuple[str, ...] = (
    "Edda Corrin", "Tobias Wrenfield", "Harriet Oldcastle", "Abel Fairhurst",
    "Lionel Ashgrove", "Miriam Hale", "Josiah Penhallow", "Clara Voss", "Peter Lusk",
    "Agnes Thorne", "Hilda Marsh", "Samuel Reed", "Gideon Pell", "Nathaniel Brisk",
    "Edith Varne",
)
PLACES: tuple[str, ...] = (
    "Dunmere", "Skarra", "Fennick", "Kerlouan", "Quay Street", "Mill Lane",
    "Tidemill Park", "Cobble Hills",
)
MONTHS: tuple[str, ...] = (
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
)
WEEKDAYS: tuple[str, ...] = (
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
)


def passage(passage_id: str) -> Passage:
    for p in PASSAGES:
        if p.id == passage_id:
            return p
    raise KeyError(passage_id)
