"""Writes the livemcp527 development query sets (see README.md in this directory).

Every query was written by hand, as an agent would, from the tool catalog
livemcp527.tools.json; the labels name each tool the query needs (`server:tool`). The script
checks every label against the catalog and splits each set by the first byte of the SHA-256 of
the query text, like MetaTool's dev half: even -> `dev` (tune on it), odd -> `heldout` (report
only). Run: python3 crates/mcplex-bench/data/livemcp527_sets.py
"""

import hashlib
import json
import pathlib

HERE = pathlib.Path(__file__).parent

# Short search strings, the way an agent types them into tool_search.
SEARCHES = """
train tickets 12306 query | 12306-mcp:get-tickets
china railway station code by city name | 12306-mcp:get-station-code-of-citys
train stops along route timetable | 12306-mcp:get-train-route-stations
transfer train tickets with connection | 12306-mcp:get-interline-tickets
antd component documentation | Ant Design Components:get-component-docs
ant design component code examples | Ant Design Components:list-component-examples
antd changelog for component | Ant Design Components:get-component-changelog
gold price | Asset_Price_MCP:get_asset_price
bazi eight characters from birth date | Bazi:buildBaziFromSolarDatetime Bazi:getBaziDetail
chinese almanac calendar today | Bazi:getChineseCalendar
library documentation lookup context7 | Context7:get-library-docs Context7:resolve-library-id
write image metadata tags | MetaTagGenie:writeImageMetadata
airbnb search listings | airbnb:airbnb_search
airbnb listing details | airbnb:airbnb_listing_details
download arxiv paper | arxiv-mcp-server:download_paper
search arxiv papers | arxiv-mcp-server:search_papers mcp-simple-arxiv:search_papers
read paper full text markdown | arxiv-mcp-server:read_paper
arxiv categories list | mcp-simple-arxiv:list_categories
paper abstract details by id | mcp-simple-arxiv:get_paper_data
create note markdown | basic-memory:write_note
search notes knowledge base | basic-memory:search_notes
edit existing note append | basic-memory:edit_note
delete note | basic-memory:delete_note
obsidian canvas | basic-memory:canvas
recent activity knowledge base | basic-memory:recent_activity
switch memory project | basic-memory:switch_project
bing search | bing-cn-mcp:bing_search
pubmed article search | biomcp:article_searcher
clinical trials search | biomcp:trial_searcher
clinical trial locations | biomcp:trial_locations_getter
genetic variant lookup | biomcp:variant_searcher biomcp:variant_getter
predict variant effect gene regulation | biomcp:alphagenome_predictor
trial outcomes results | biomcp:trial_outcomes_getter
calculator evaluate expression | calculator:calculate
math calculation | calculator:calculate
chess make move | chess:make_move
chess legal moves | chess:get_valid_moves
start new chess game | chess:new_game
chess board image | chess:get_board_visualization
leetcode daily challenge | coin-flip:get-daily-challenge
leetcode problem by slug | coin-flip:get-problem
leetcode user profile | coin-flip:get-user-profile
search leetcode problems by difficulty tag | coin-flip:search-problems
data.gov dataset search | datagov:package_search
dataset details data.gov | datagov:package_show
run terminal command | desktop-commander:start_process
kill process pid | desktop-commander:kill_process desktop-commander:force_terminate
list running processes | desktop-commander:list_processes
search code ripgrep | desktop-commander:search_code
edit file replace text | desktop-commander:edit_block filesystem:edit_file
docker list containers | docker-mcp:list-containers
docker container logs | docker-mcp:get-logs
run docker container | docker-mcp:create-container
docker compose deploy | docker-mcp:deploy-compose
web search | duckduckgo-search:duckduckgo_web_search bing-cn-mcp:bing_search
duckduckgo search news | duckduckgo-search:duckduckgo_web_search
read excel sheet | excel:excel_read_sheet searxng:excel_read
write values excel | excel:excel_write_to_sheet
list excel sheets | excel:excel_describe_sheets
currency exchange rate | exchange-rate-mcp:exchange_rate
fetch url as markdown | fetch:fetch npx_fetch:fetch_markdown
directory tree | filesystem:directory_tree
list allowed directories | filesystem:list_allowed_directories
file size modified time metadata | filesystem:get_file_info desktop-commander:get_file_info
create folder | filesystem:create_directory desktop-commander:create_directory
rename file | filesystem:move_file desktop-commander:move_file
git commit | git:git_commit
git diff staged | git:git_diff_staged
git create branch | git:git_create_branch
git log history | git:git_log
git status | git:git_status
stage files git add | git:git_add
hacker news top stories | hackernews:getStories
hacker news comments story | hackernews:getComments hackernews:getStoryWithComments hackernews:getCommentTree
hn user profile | hackernews:getUser
recipe recommendations meal plan | howtocook-mcp:mcp_howtocook_recommendMeals
what to eat suggestion dishes | howtocook-mcp:mcp_howtocook_whatToEat
recipe by name | howtocook-mcp:mcp_howtocook_getRecipeById
search icons | hugeicons:search_icons
ocr image text from file | image-extractor:extract_image_from_file
analyze image from url | image-extractor:extract_image_from_url
fear and greed index | investor:get_cnn_fear_greed_index investor:get_crypto_fear_greed_index
insider trades | investor:get_insider_trades
institutional holders stock | investor:get_institutional_holders
options chain calls puts | investor:get_options
korean stock ohlcv kospi | kospi-kosdaq:get_stock_ohlcv
kospi market cap | kospi-kosdaq:get_stock_market_cap
magic ui buttons | magicuidesign_mcp:getButtons
text animation components | magicuidesign_mcp:getTextAnimations
maven latest version | maven-deps-server:get_latest_release
check maven dependency version exists | maven-deps-server:check_maven_version_exists
bitcoin price | mcp-crypto-price:get-crypto-price Asset_Price_MCP:get_asset_price
crypto market analysis exchanges volume | mcp-crypto-price:get-market-analysis
deepwiki repo docs | mcp-deepwiki:deepwiki_fetch
github trending repositories | mcp-github-trending:get_github_trending_repositories
trending developers github | mcp-github-trending:get_github_trending_developers
bar chart | mcp-server-chart:generate_bar_chart
pie chart market share | mcp-server-chart:generate_pie_chart
line chart trend over time | mcp-server-chart:generate_line_chart
flowchart diagram | mcp-server-chart:generate_flow_diagram
word cloud | mcp-server-chart:generate_word_cloud_chart
org chart | mcp-server-chart:generate_organization_chart
mind map from markdown | mindmap:convert_markdown_to_mindmap mcp-server-chart:generate_mind_map
knowledge graph add entities | memory:create_entities
knowledge graph search | memory:search_nodes
read entire knowledge graph | memory:read_graph
add relation between entities | memory:create_relations
validate mermaid diagram | mermaid-validator:validateMermaid
met museum search artworks | met-museum:search-museum-objects
museum object by id | met-museum:get-museum-object
audio tempo bpm | music-analysis:tempo
download youtube audio | music-analysis:download_from_youtube
load audio file | music-analysis:load
beat tracking | music-analysis:beat_track
mfcc features | music-analysis:mfcc
npm package vulnerabilities | npm-sentinel-mcp:npmVulnerabilities
npm download trends | npm-sentinel-mcp:npmTrends
npm package size bundle | npm-sentinel-mcp:npmSize
compare npm packages | npm-sentinel-mcp:npmCompare
npm search | npm-sentinel-mcp:npmSearch
npm readme | npm-sentinel-mcp:npmPackageReadme
fetch page as plain text | npx_fetch:fetch_txt
fetch json url | npx_fetch:fetch_json
pptx slide count info | okppt:get_pptx_info
convert svg to png | okppt:convert_svg_to_png
lol champion build win rate | opgg-mcp:lol-champion-analysis
summoner match history | opgg-mcp:lol-summoner-game-history
valorant leaderboard | opgg-mcp:valorant-leaderboard
tft meta decks | opgg-mcp:tft-meta-trend-deck-list
lol esports schedule | opgg-mcp:esports-lol-schedules
geocode address | osm-mcp-server:geocode_address
reverse geocode coordinates | osm-mcp-server:reverse_geocode
route directions between two points | osm-mcp-server:get_route_directions
ev charging stations nearby | osm-mcp-server:find_ev_charging_stations
nearby restaurants | osm-mcp-server:find_nearby_places osm-mcp-server:search_category
parking near location | osm-mcp-server:find_parking_facilities
draw rectangle canvas | painter:drawing_fillRectangle
canvas png image | painter:drawing_getCanvasPng
read pdf text | pdf-reader-mcp:read_pdf searxng:document_reader
browser navigate url | playwright:playwright_navigate puppeteer:puppeteer_navigate
take screenshot page | playwright:playwright_screenshot puppeteer:puppeteer_screenshot
click button | playwright:playwright_click puppeteer:puppeteer_click
fill form input | playwright:playwright_fill puppeteer:puppeteer_fill
save page as pdf | playwright:playwright_save_as_pdf
get visible text of page | playwright:playwright_get_visible_text
http post request | playwright:playwright_post
browser console logs | playwright:playwright_console_logs
create powerpoint presentation | ppt:create_presentation
add slide | ppt:add_slide okppt:add_slide_with_layout
add chart to slide | ppt:add_chart
save presentation | ppt:save_presentation
insert table in slide | ppt:add_table
random number between | random-number:random_int
shuffle list | random-number:random_shuffle
generate secure token | random-number:secure_token_hex
docx to pdf | searxng:docx_to_pdf word-document-server:convert_to_pdf
merge pdfs | searxng:pdf_merger
split pdf pages | searxng:pdf_splitter
html to markdown | searxng:html_to_markdown
diff two text files | searxng:text_diff
sequential thinking | sequential-thinking:sequentialthinking
shadcn component examples | shadcn-ui-server:get_component_examples
sitemap pages | sitemap:get_sitemap_pages
plan tasks request | taskmanager:request_planning
mark task done | taskmanager:mark_task_done
next pending task | taskmanager:get_next_task
edit text file line range | text-editor:edit_text_file_contents
current time timezone | time:get_current_time
convert time zones | time:convert_time
weibo trending | trends-hub:get-weibo-trending
bbc news | trends-hub:get-bbc-news
zhihu hot list | trends-hub:get-zhihu-trending
the verge tech news | trends-hub:get-theverge-news
weather forecast city | weather:get_weather_by_city
weather at coordinates | weather:get_weather
token research plan crypto | web3-research-mcp:create-research-plan
whois domain | whois:whois_domain
ip whois lookup | whois:whois_ip
wikipedia summary | wikipedia:get_summary
wikipedia search | wikipedia:search_wikipedia
wikipedia article full text | wikipedia:get_article
word document create | word-document-server:create_document
add heading word doc | word-document-server:add_heading
docx find replace text | word-document-server:search_and_replace
password protect document | word-document-server:protect_document
extract text from word document | word-document-server:get_document_text
insert image into word | word-document-server:add_picture
stock price current | yahoo-finance:get_current_stock_price
historical stock prices | yahoo-finance:get_historical_stock_prices yfmcp:get_price_history investor:get_price_history
stock news ticker | yahoo-finance:get_news yfmcp:get_ticker_news
income statement | yahoo-finance:get_income_statement investor:get_financial_statements
dividends history | yahoo-finance:get_dividends
analyst recommendations | yahoo-finance:get_recommendations
top companies in sector | yfmcp:get_top
yugioh card search | ygocdb:search_cards
youtube transcript | youtube-transcript:get_transcript
wuthering waves character info | wuwa-mcp:get_character_info wuwa-mcp:get_character_profile
douban movie ranking | trends-hub:get-douban-rank
data.gov tags | datagov:tag_list
list npm package versions | npm-sentinel-mcp:npmVersions
"""

# Task descriptions that need two to four tools; each needed tool is a label.
TASKS = """
Find recent arXiv papers about diffusion models, download the most relevant one and read its full text. | arxiv-mcp-server:search_papers arxiv-mcp-server:download_paper arxiv-mcp-server:read_paper
Look up the current Bitcoin price and the USD to EUR exchange rate, then compute the price in euros. | mcp-crypto-price:get-crypto-price exchange-rate-mcp:exchange_rate calculator:calculate
Get the historical prices of AAPL for the last year and draw them as a line chart. | yahoo-finance:get_historical_stock_prices mcp-server-chart:generate_line_chart
Open example.com in a browser, fill the login form, click submit and take a screenshot. | playwright:playwright_navigate playwright:playwright_fill playwright:playwright_click playwright:playwright_screenshot
Create a new git branch, commit the staged changes and show the log. | git:git_create_branch git:git_commit git:git_log
Check the weather in Paris and find nearby parks to visit. | weather:get_weather_by_city osm-mcp-server:find_nearby_places
Search Wikipedia for the Eiffel Tower, summarize the article and save the summary as a note. | wikipedia:search_wikipedia wikipedia:get_summary basic-memory:write_note
Fetch the transcript of this YouTube video and turn its outline into a mind map. | youtube-transcript:get_transcript mindmap:convert_markdown_to_mindmap
Create a Word document with a title heading, add a paragraph with the report, and convert it to PDF. | word-document-server:create_document word-document-server:add_heading word-document-server:add_paragraph word-document-server:convert_to_pdf
Read the sales figures from the Excel workbook and make a bar chart of them. | excel:excel_read_sheet mcp-server-chart:generate_bar_chart
Find the coordinates of the office address, then get driving directions from my home there. | osm-mcp-server:geocode_address osm-mcp-server:get_route_directions
List the running docker containers and show the logs of the web container. | docker-mcp:list-containers docker-mcp:get-logs
Check the npm package lodash for vulnerabilities and find alternative packages. | npm-sentinel-mcp:npmVulnerabilities npm-sentinel-mcp:npmAlternatives
Search PubMed for articles on BRCA1 mutations and find clinical trials recruiting for breast cancer. | biomcp:article_searcher biomcp:trial_searcher
Get the top Hacker News stories and read the comments of the first one. | hackernews:getStories hackernews:getComments
Make a new PowerPoint presentation, add a slide with a chart of quarterly revenue and save it. | ppt:create_presentation ppt:add_slide ppt:add_chart ppt:save_presentation
Download the song from this YouTube link, load the audio and estimate its tempo. | music-analysis:download_from_youtube music-analysis:load music-analysis:tempo
Find trending GitHub repositories for Rust and read the documentation of the top one on DeepWiki. | mcp-github-trending:get_github_trending_repositories mcp-deepwiki:deepwiki_fetch
Look up who owns the domain example.org and the whois record of its IP address. | whois:whois_domain whois:whois_ip
Read the PDF report, extract the key numbers and write them into an Excel sheet. | pdf-reader-mcp:read_pdf excel:excel_write_to_sheet
Search the web for the latest news about the Mars mission and fetch the top article's page. | duckduckgo-search:duckduckgo_web_search fetch:fetch
Record in the knowledge graph that Alice works at Acme: create both entities and the relation between them. | memory:create_entities memory:create_relations
Shuffle the list of participants randomly and generate a secure hex token for each prize code. | random-number:random_shuffle random-number:secure_token_hex
Convert this DOCX to HTML, clean up the HTML and turn it into Markdown. | searxng:docx_to_html searxng:html_cleaner searxng:html_to_markdown
Start a new chess game, make the move e4 and show the board. | chess:new_game chess:make_move chess:get_board_visualization
Find Airbnb places in Lisbon for next weekend and get the details of the cheapest one. | airbnb:airbnb_search airbnb:airbnb_listing_details
Get the financial statements and insider trades for Tesla to evaluate the company. | investor:get_financial_statements investor:get_insider_trades
Plan the website redesign as tasks, then get the next task and mark it done when finished. | taskmanager:request_planning taskmanager:get_next_task taskmanager:mark_task_done
Look up the React library's docs on Context7 about hooks. | Context7:resolve-library-id Context7:get-library-docs
What time is it in Tokyo now, and what is that in New York time? | time:get_current_time time:convert_time
Find EV charging stations near the hotel address and the parking garages around it. | osm-mcp-server:geocode_address osm-mcp-server:find_ev_charging_stations osm-mcp-server:find_parking_facilities
Read the config file, replace the port number in it and check the git diff. | filesystem:read_file filesystem:edit_file git:git_diff_unstaged
Search the Met Museum for Van Gogh paintings and get the details of the first object. | met-museum:search-museum-objects met-museum:get-museum-object
Get a LoL summoner's recent match history and the analysis of the champion they play most. | opgg-mcp:lol-summoner-game-history opgg-mcp:lol-champion-analysis
Take the visible text of the current web page and save it as a markdown note. | playwright:playwright_get_visible_text basic-memory:write_note
Extract the text from this screenshot image file and send it to the API with an HTTP POST. | image-extractor:extract_image_from_file playwright:playwright_post
Get today's LeetCode daily challenge and show the full problem statement. | coin-flip:get-daily-challenge coin-flip:get-problem
Search data.gov for air quality datasets and show the details of one. | datagov:package_search datagov:package_show
Find the latest Maven release of Jackson databind and check that version 2.15.0 exists. | maven-deps-server:get_latest_release maven-deps-server:check_maven_version_exists
Get the sitemap of the site and fetch each page as markdown. | sitemap:get_sitemap_pages npx_fetch:fetch_markdown
Get the news for NVDA stock and the analyst recommendations. | yahoo-finance:get_news yahoo-finance:get_recommendations
Write a Python script to a file and run it in the terminal, then read its output. | desktop-commander:write_file desktop-commander:start_process desktop-commander:read_process_output
List the files in the project directory and read the README. | filesystem:list_directory filesystem:read_file
Merge the two PDF invoices into one and then split out pages 1-3. | searxng:pdf_merger searxng:pdf_splitter
Get the Wikipedia article on photosynthesis, extract its key facts and build a mind map. | wikipedia:get_article wikipedia:extract_key_facts mcp-server-chart:generate_mind_map
Find a dish for dinner for four people and plan the week's meals with a shopping list. | howtocook-mcp:mcp_howtocook_whatToEat howtocook-mcp:mcp_howtocook_recommendMeals
Check the Korean stock Samsung's OHLCV and its market cap over the last month. | kospi-kosdaq:get_stock_ohlcv kospi-kosdaq:get_stock_market_cap
Look up the BBC headlines and the Weibo trending topics to compare today's news. | trends-hub:get-bbc-news trends-hub:get-weibo-trending
Compare the npm packages express and fastify and show their weekly download trends. | npm-sentinel-mcp:npmCompare npm-sentinel-mcp:npmTrends
Create a canvas, fill a red rectangle on it and export it as a PNG. | painter:drawing_generateCanvas painter:drawing_fillRectangle painter:drawing_getCanvasPng
Validate my Mermaid flowchart and also render the process as a flow diagram chart. | mermaid-validator:validateMermaid mcp-server-chart:generate_flow_diagram
Open the quarterly deck, add a table with the results and save the presentation. | ppt:open_presentation ppt:add_table ppt:save_presentation
Find clinical trials for melanoma and get the locations and the outcome results of a trial. | biomcp:trial_searcher biomcp:trial_locations_getter biomcp:trial_outcomes_getter
Go to the shop page, hover the menu, select the size option and upload my photo. | playwright:playwright_navigate playwright:playwright_hover playwright:playwright_select playwright:playwright_upload_file
Get the Bitcoin fear and greed index and the historical price analysis for the last 30 days. | investor:get_crypto_fear_greed_index mcp-crypto-price:get-historical-analysis
Turn the address 1600 Amphitheatre Parkway into coordinates and get the weather there. | osm-mcp-server:geocode_address weather:get_weather
Stage all changed files, commit them with a message and show the status. | git:git_add git:git_commit git:git_status
Find shadcn components for a date picker and show its usage examples. | shadcn-ui-server:search_components shadcn-ui-server:get_component_examples
Search my notes for the meeting with Bob and append today's decisions to that note. | basic-memory:search_notes basic-memory:edit_note
Create a research plan for the token UNI and research it with keywords like governance. | web3-research-mcp:create-research-plan web3-research-mcp:research-with-keywords
Find the Word documents in the folder, get the text of the contract and search it for the word penalty. | word-document-server:list_available_documents word-document-server:get_document_text word-document-server:find_text_in_document
Compute the average of these numbers and plot their distribution as a histogram. | calculator:calculate mcp-server-chart:generate_histogram_chart
Find train tickets from Beijing to Shanghai tomorrow: get today's date and the cities' station codes first. | 12306-mcp:get-current-date 12306-mcp:get-station-code-of-citys 12306-mcp:get-tickets
Get the dividends and the cashflow of Coca-Cola stock. | yahoo-finance:get_dividends yahoo-finance:get_cashflow
Fetch the JSON from the API endpoint and convert it into XML. | npx_fetch:fetch_json searxng:format_convert
Get the Valorant meta agents and the agent composition for the map Ascent. | opgg-mcp:valorant-meta-characters opgg-mcp:valorant-agents-composition-with-map
Search Hacker News for posts about Rust and get the profile of the author of the top hit. | hackernews:search hackernews:getUser
Convert the file's text encoding to UTF-8 and format it with proper indentation. | searxng:text_encoding_converter searxng:text_formatter
Insert an image into the Word report and add a footnote citing its source. | word-document-server:add_picture word-document-server:add_footnote_to_document
Get the yugioh card by its id and show its card image. | ygocdb:get_card_by_id ygocdb:get_card_image
"""


def parse(block, prefix):
    queries = []
    for number, line in enumerate(l for l in block.strip().splitlines() if l.strip()):
        text, labels = (part.strip() for part in line.rsplit(" | ", 1))
        ids, pending = [], []
        for word in labels.split(" "):
            pending.append(word)
            if ":" in word:  # a server name may hold spaces: words gather up to the colon
                ids.append(" ".join(pending))
                pending = []
        assert not pending, line
        queries.append({
            "id": f"{prefix}_{number}",
            "query": text,
            "labels": [{"tool_id": i, "relevance": 1} for i in ids],
        })
    return queries


def split_of(query):
    return "dev" if hashlib.sha256(query.encode()).digest()[0] % 2 == 0 else "heldout"


def write_sets(name, block, prefix):
    """Checks `block`'s labels against the catalog and writes its dev and held-out halves."""
    catalog = json.loads((HERE / "livemcp527.tools.json").read_text())
    known = {f"{t['server']}:{t['tool']}" for t in catalog["tools"]}
    queries = parse(block, prefix)
    for query in queries:
        for label in query["labels"]:
            assert label["tool_id"] in known, (query["query"], label["tool_id"])
    texts = [q["query"] for q in queries]
    assert len(set(texts)) == len(texts), "duplicate query"
    for split in ["dev", "heldout"]:
        part = [q for q in queries if split_of(q["query"]) == split]
        out = {
            "corpus_version": "livemcp527",
            "split": f"{split} (sha256(query)[0] {'even' if split == 'dev' else 'odd'})",
            "queries": part,
        }
        path = HERE / f"livemcp527.{name}.{split}.json"
        path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
        print(path.name, len(part))


if __name__ == "__main__":
    write_sets("search", SEARCHES, "s")
    write_sets("tasks", TASKS, "t")
