"""Writes the hard livemcp527 development query sets (see README.md in this directory).

Unlike livemcp527_sets.py (queries written from the catalog's own words), these are written in an
agent's or a user's vocabulary: the goal rather than the tool's name, synonyms, the service a
user knows ("subtitles", "bpm", "who registered this domain"), most of them sharing few or no
words with the tool's name and description. Written by hand without looking at any ranking;
labels are exact catalog names (`server:tool`), checked against the catalog by `write_sets`. When
two servers offer the same thing, each equivalent tool is a label. Split by the first byte of the
SHA-256 of the query text: even -> `dev` (tune on it), odd -> `heldout` (report only).
Run: python3 crates/mcplex-bench/data/livemcp527_agent_sets.py
"""

from livemcp527_sets import write_sets

# Search strings as an agent types them into tool_search while solving a task.
AGENT_SEARCHES = """
book train from beijing to shanghai | 12306-mcp:get-tickets
china rail seat availability | 12306-mcp:get-tickets
which stations does train G1 stop at | 12306-mcp:get-train-route-stations
train journey with a change of trains in china | 12306-mcp:get-interline-tickets
today's date in china timezone | 12306-mcp:get-current-date
all railway stations in a city | 12306-mcp:get-stations-code-in-city
antd Table api props | Ant Design Components:get-component-docs
which ant design widgets are available | Ant Design Components:list-components
sample code for antd datepicker | Ant Design Components:list-component-examples
how much is an ounce of silver | Asset_Price_MCP:get_asset_price
precious metals price today | Asset_Price_MCP:get_asset_price
four pillars of destiny reading | Bazi:getBaziDetail
lucky days huangli | Bazi:getChineseCalendar
horoscope from lunar birthday | Bazi:buildBaziFromLunarDatetime
up to date docs for nextjs | Context7:resolve-library-id Context7:get-library-docs
add exif tags to photo | MetaTagGenie:writeImageMetadata
tag people and location in a jpeg | MetaTagGenie:writeImageMetadata
vacation rental search | airbnb:airbnb_search
find apartment to stay in rome | airbnb:airbnb_search
details of a holiday home | airbnb:airbnb_listing_details
find research papers on transformers | arxiv-mcp-server:search_papers mcp-simple-arxiv:search_papers
get pdf of preprint | arxiv-mcp-server:download_paper
papers I already downloaded | arxiv-mcp-server:list_papers
abstract of arxiv 2301.00001 | mcp-simple-arxiv:get_paper_data
refresh arxiv subject taxonomy | mcp-simple-arxiv:update_categories
save this to my notes | basic-memory:write_note
look up what I wrote about project x | basic-memory:search_notes
open my note called standup | basic-memory:read_note basic-memory:view_note
move note to another folder | basic-memory:move_note
what changed in my notes this week | basic-memory:recent_activity
new knowledge base project | basic-memory:create_memory_project
continue conversation from memory url | basic-memory:build_context
which notes project is active | basic-memory:get_current_project
search the internet | duckduckgo-search:duckduckgo_web_search bing-cn-mcp:bing_search
open search result by id | bing-cn-mcp:fetch_webpage
medical literature search | biomcp:article_searcher biomcp:search
studies recruiting patients for lung cancer | biomcp:trial_searcher
mutation info for BRAF V600E | biomcp:variant_searcher biomcp:variant_getter
where is trial NCT04280705 running | biomcp:trial_locations_getter
eligibility criteria of a trial | biomcp:trial_protocol_getter
publications linked to a clinical study | biomcp:trial_references_getter
full text of pubmed paper by pmid | biomcp:article_getter
what is 17% of 2340 | calculator:calculate
do arithmetic | calculator:calculate
whose move is it | chess:get_turn
play pawn to e4 | chess:make_move
reset chessboard | chess:new_game
show the chess position picture | chess:get_board_visualization
locate position in game record | chess:find_position_in_pgn
coding interview problem of the day | coin-flip:get-daily-challenge
leetcode contest info | coin-flip:get-contest-details
my recent leetcode submissions | coin-flip:get-user-submissions
find medium dynamic programming problems | coin-flip:search-problems
government open data about air quality | datagov:package_search
tags used on data.gov | datagov:tag_list
organizations publishing on data.gov | datagov:group_list
execute shell command | desktop-commander:start_process
send input to running repl | desktop-commander:interact_with_process
stop a program by pid | desktop-commander:kill_process
grep for a string in source files | desktop-commander:search_code
find file by name | desktop-commander:search_files filesystem:search_files
file size and modified date | desktop-commander:get_file_info filesystem:get_file_info
open terminal sessions | desktop-commander:list_sessions
change desktop commander setting | desktop-commander:set_config_value
get output of background command | desktop-commander:read_process_output
spin up a container from an image | docker-mcp:create-container
show containers running on this machine | docker-mcp:list-containers
container output tail | docker-mcp:get-logs
start multi-container stack from yaml | docker-mcp:deploy-compose
open spreadsheet and get cell values | excel:excel_read_sheet searxng:excel_read
put data into xlsx | excel:excel_write_to_sheet
duplicate worksheet | excel:excel_copy_sheet
format range as table in spreadsheet | excel:excel_create_table
what tabs does this workbook have | excel:excel_describe_sheets
convert currency usd to eur | exchange-rate-mcp:exchange_rate
how many yen per dollar | exchange-rate-mcp:exchange_rate
scrape a website text | fetch:fetch npx_fetch:fetch_txt
call a rest api and parse json response | npx_fetch:fetch_json playwright:playwright_get
raw html source of url | npx_fetch:fetch_html
list files in folder | filesystem:list_directory desktop-commander:list_directory
show folder structure recursively | filesystem:directory_tree
save text to a file | filesystem:write_file desktop-commander:write_file
open and read a text file | filesystem:read_file desktop-commander:read_file text-editor:get_text_file_contents
make a new folder | filesystem:create_directory desktop-commander:create_directory
rename a file | filesystem:move_file desktop-commander:move_file
which folders can I access | filesystem:list_allowed_directories
biggest files in directory | filesystem:list_directory_with_sizes
uncommitted changes | git:git_diff_unstaged git:git_status
save my work to version control | git:git_commit
undo git add | git:git_reset
switch to another branch | git:git_checkout
start a repo in this folder | git:git_init
commit history | git:git_log
what branches exist | git:git_branch
details of a specific commit hash | git:git_show
compare main with feature branch | git:git_diff
top tech news on HN | hackernews:getStories
hn discussion thread for a post | hackernews:getStoryWithComments hackernews:getComments hackernews:getCommentTree
what has this hn user posted | hackernews:getUserSubmissions
hacker news karma of user | hackernews:getUser
what should I cook tonight | howtocook-mcp:mcp_howtocook_whatToEat
recipe details for kung pao chicken | howtocook-mcp:mcp_howtocook_getRecipeById
weekly meal plan with grocery list | howtocook-mcp:mcp_howtocook_recommendMeals
dessert recipes | howtocook-mcp:mcp_howtocook_getRecipesByCategory
find an icon for settings | hugeicons:search_icons
how to use icons in react native | hugeicons:get_platform_usage
describe what's in this picture url | image-extractor:extract_image_from_url
analyze a local screenshot | image-extractor:extract_image_from_file
look at base64 image data | image-extractor:extract_image_from_base64
market sentiment index | investor:get_cnn_fear_greed_index investor:get_crypto_fear_greed_index
big funds holding apple shares | investor:get_institutional_holders
call and put options chain | investor:get_options
company past earnings surprises | investor:get_earnings_history
executives buying or selling stock | investor:get_insider_trades
balance sheet of a company | investor:get_financial_statements
korean stock price history | kospi-kosdaq:get_stock_ohlcv
samsung electronics PER PBR | kospi-kosdaq:get_stock_fundamental
foreign investors buying korean stock | kospi-kosdaq:get_stock_trading_volume
korean exchange ticker list | kospi-kosdaq:load_all_tickers
shiny animated button component | magicuidesign_mcp:getButtons
iphone mockup frame component | magicuidesign_mcp:getDeviceMocks
typewriter text animation component | magicuidesign_mcp:getTextAnimations
newest version of a java library | maven-deps-server:get_latest_release
all published versions of spring-core | maven-deps-server:list_maven_versions
how much is ethereum worth | mcp-crypto-price:get-crypto-price
btc price trend last month | mcp-crypto-price:get-historical-analysis
which exchanges trade the most solana | mcp-crypto-price:get-market-analysis
explain a github repo's architecture docs | mcp-deepwiki:deepwiki_fetch
popular open source projects this week | mcp-github-trending:get_github_trending_repositories
hot github developers | mcp-github-trending:get_github_trending_developers
plot sales over time | mcp-server-chart:generate_line_chart mcp-server-chart:generate_area_chart
market share breakdown chart | mcp-server-chart:generate_pie_chart
visualize company hierarchy | mcp-server-chart:generate_organization_chart
correlation plot of two variables | mcp-server-chart:generate_scatter_chart
root cause analysis diagram | mcp-server-chart:generate_fishbone_diagram
conversion pipeline drop-off chart | mcp-server-chart:generate_funnel_chart
progress percentage gauge | mcp-server-chart:generate_liquid_chart
overlapping sets diagram | mcp-server-chart:generate_venn_chart
energy flow between categories | mcp-server-chart:generate_sankey_chart
draw a map of points of interest | mcp-server-chart:generate_pin_map
tag cloud of keywords | mcp-server-chart:generate_word_cloud_chart
compare skills across several dimensions chart | mcp-server-chart:generate_radar_chart
remember a fact about a person | memory:add_observations memory:create_entities
link two entities | memory:create_relations
dump the whole knowledge graph | memory:read_graph
forget an entity | memory:delete_entities
check mermaid syntax | mermaid-validator:validateMermaid
render a sequence diagram to svg | mermaid-validator:validateMermaid
find artworks by monet | met-museum:search-museum-objects
met museum collection areas | met-museum:list-departments
markdown outline to mind map | mindmap:convert_markdown_to_mindmap mcp-server-chart:generate_mind_map
bpm of a song | music-analysis:tempo
how long is this audio file | music-analysis:get_duration
detect beats in a track | music-analysis:beat_track
timbre features of audio for ml | music-analysis:mfcc
rip audio from youtube video | music-analysis:download_from_youtube
pitch class profile of a song | music-analysis:chroma_cqt
is this npm package still maintained | npm-sentinel-mcp:npmMaintenance npm-sentinel-mcp:npmDeprecated
bundle size of a js library | npm-sentinel-mcp:npmSize
does package have typescript definitions | npm-sentinel-mcp:npmTypes
security issues in node dependencies | npm-sentinel-mcp:npmVulnerabilities
find a js library for date formatting | npm-sentinel-mcp:npmSearch
github stars of an npm package | npm-sentinel-mcp:npmRepoStats
are MIT and GPL packages compatible | npm-sentinel-mcp:npmLicenseCompatibility
what's new in the latest react release | npm-sentinel-mcp:npmLatest npm-sentinel-mcp:npmChangelogAnalysis
who maintains this package | npm-sentinel-mcp:npmMaintainers
readme of an npm module | npm-sentinel-mcp:npmPackageReadme
insert svg graphic into pptx | okppt:insert_svg
how many slides in pptx | okppt:get_pptx_info ppt:get_presentation_info
svg to png | okppt:convert_svg_to_png
remove slide from deck | okppt:delete_slide
league of legends player rank lookup | opgg-mcp:lol-summoner-search
best build for a lol champion | opgg-mcp:lol-champion-analysis opgg-mcp:lol-champion-meta-data
upcoming lol esports matches | opgg-mcp:esports-lol-schedules
lck standings | opgg-mcp:esports-lol-team-standings
discounted champion skins | opgg-mcp:lol-champion-skin-sale
teamfight tactics best comps | opgg-mcp:tft-meta-trend-deck-list
valorant top players ranking | opgg-mcp:valorant-leaderboard
valorant recent games of player | opgg-mcp:valorant-player-match-history
address to lat long | osm-mcp-server:geocode_address
what address is at these coordinates | osm-mcp-server:reverse_geocode
restaurants near me | osm-mcp-server:find_nearby_places osm-mcp-server:search_category
how do I get from A to B by car | osm-mcp-server:get_route_directions
where to park downtown | osm-mcp-server:find_parking_facilities
charge my electric car nearby | osm-mcp-server:find_ev_charging_stations
is this a good area to live | osm-mcp-server:analyze_neighborhood
good place to meet halfway between friends | osm-mcp-server:suggest_meeting_point
daily commute time from home to office | osm-mcp-server:analyze_commute
elementary schools near address | osm-mcp-server:find_schools_nearby
draw a blue box on an image canvas | painter:drawing_fillRectangle
blank canvas 800x600 | painter:drawing_generateCanvas
export drawing as image | painter:drawing_getCanvasPng
extract text from pdf | pdf-reader-mcp:read_pdf searxng:document_reader
pdf page count and metadata | pdf-reader-mcp:read_pdf
open a website in the browser | playwright:playwright_navigate puppeteer:puppeteer_navigate
type into a text box on the page | playwright:playwright_fill puppeteer:puppeteer_fill
capture the page as an image | playwright:playwright_screenshot puppeteer:puppeteer_screenshot
run javascript on the page | playwright:playwright_evaluate puppeteer:puppeteer_evaluate
press enter key in browser | playwright:playwright_press_key
print page to pdf | playwright:playwright_save_as_pdf
browser back button | playwright:playwright_go_back
read browser console errors | playwright:playwright_console_logs
send a DELETE http request | playwright:playwright_delete
spoof user agent | playwright:playwright_custom_user_agent
record browser actions into a test | playwright:start_codegen_session
drag and drop element | playwright:playwright_drag
page html source after render | playwright:playwright_get_visible_html
quit browser | playwright:playwright_close
choose option from dropdown | playwright:playwright_select puppeteer:puppeteer_select
make a slide deck | ppt:create_presentation ppt:auto_generate_presentation
add bullet list to slide | ppt:add_bullet_points
insert picture into slide | ppt:manage_image
change slide transition animation | ppt:manage_slide_transitions
set theme colors for presentation | ppt:apply_professional_design
update numbers in existing chart on slide | ppt:update_chart_data
draw arrow between shapes on slide | ppt:add_connector
set presentation author and title metadata | ppt:set_core_properties
roll a dice | random-number:random_int
pick 3 winners from list | random-number:random_sample
generate random password token | random-number:secure_token_hex
random decimal between 0 and 1 | random-number:random_float
weighted random pick | random-number:random_choices
docx to pdf | searxng:docx_to_pdf word-document-server:convert_to_pdf
strip html tags to plain text | searxng:html_to_text
pretty print html | searxng:html_formatter
diff two text files | searxng:text_diff
chunk a big text file into pieces | searxng:text_splitter
combine pdfs | searxng:pdf_merger
get all image links from html | searxng:html_extract_resources
markdown to html | searxng:format_convert
convert gbk file to utf8 | searxng:text_encoding_converter
think step by step about a problem | sequential-thinking:sequentialthinking
tailwind react component library list | shadcn-ui-server:list_shadcn_components
shadcn dialog props and install | shadcn-ui-server:get_component_details
all urls on a website | sitemap:get_sitemap_pages
how many pages does a site have | sitemap:get_sitemap_stats
parse a sitemap.xml I pasted | sitemap:parse_sitemap_content
break down a request into todo items | taskmanager:request_planning
what's the next todo | taskmanager:get_next_task
mark todo complete | taskmanager:mark_task_done
show all my task plans | taskmanager:list_requests
edit lines 10-20 of a file | text-editor:edit_text_file_contents filesystem:edit_file desktop-commander:edit_block
read specific line range of a file | text-editor:get_text_file_contents
what time is it in london | time:get_current_time
convert 3pm PST to CET | time:convert_time
chinese social media hot topics | trends-hub:get-weibo-trending trends-hub:get-douyin-trending trends-hub:get-zhihu-trending
apple news | trends-hub:get-9to5mac-news
new york times headlines | trends-hub:get-nytimes-news
popular chinese tech articles for developers | trends-hub:get-juejin-article-rank trends-hub:get-infoq-news
trending videos on bilibili | trends-hub:get-bilibili-rank
best selling books china | trends-hub:get-weread-rank trends-hub:get-douban-rank
shopping deals china | trends-hub:get-smzdm-rank
startup funding news china | trends-hub:get-36kr-trending
tech gadget news the verge | trends-hub:get-theverge-news
get weather forecast for coordinates | weather:get_weather
is it going to rain in berlin tomorrow | weather:get_weather_by_city
temperature in tokyo | weather:get_weather_by_city
research a crypto token | web3-research-mcp:research-token
crypto project due diligence plan | web3-research-mcp:create-research-plan
who registered this domain | whois:whois_domain
owner of an ip address | whois:whois_ip
asn lookup | whois:whois_as
encyclopedia article about the roman empire | wikipedia:get_article wikipedia:search_wikipedia
short summary of a wiki page | wikipedia:get_summary
table of contents of a wikipedia page | wikipedia:get_sections
related subjects to quantum computing wiki | wikipedia:get_related_topics
new word doc | word-document-server:create_document
find and replace in docx | word-document-server:search_and_replace
password protect a word file | word-document-server:protect_document
add table to word report | word-document-server:add_table
insert image in docx | word-document-server:add_picture
bold a sentence in word document | word-document-server:format_text
docx headings outline | word-document-server:get_document_outline
wuthering waves character build guide | wuwa-mcp:get_character_info
wuthering waves echo set | wuwa-mcp:get_artifact_info
stock quote for msft | yahoo-finance:get_current_stock_price
when does nvidia report earnings | yahoo-finance:get_earning_dates
tesla closing price on 2024-01-05 | yahoo-finance:get_stock_price_by_date
analyst ratings for a stock | yahoo-finance:get_recommendations
company revenue and net income | yahoo-finance:get_income_statement
latest headlines about a company stock | yahoo-finance:get_news yfmcp:get_ticker_news
top etfs by sector | yfmcp:get_top
look up ticker symbol for company name | yfmcp:search
yu-gi-oh card search by effect text | ygocdb:search_cards
get subtitles of a youtube video | youtube-transcript:get_transcript
what does this video say captions | youtube-transcript:get_transcript
"""

# Multi-step requests in a user's words; each tool the request needs is a label.
AGENT_TASKS = """
I'm flying to Berlin next week. Tell me what the weather will be like there and find me a place to stay. | weather:get_weather_by_city airbnb:airbnb_search
Pull up the last 6 months of Microsoft share prices, chart them, and tell me what analysts think. | yahoo-finance:get_historical_stock_prices mcp-server-chart:generate_line_chart yahoo-finance:get_recommendations
For my node project, check whether express has known security holes and how much it adds to my bundle. | npm-sentinel-mcp:npmVulnerabilities npm-sentinel-mcp:npmSize
Look at what I've changed in the repo, stage everything and commit it with the message 'fix typo'. | git:git_diff_unstaged git:git_add git:git_commit
Grab the subtitles of this YouTube talk and save the key points into my notes. | youtube-transcript:get_transcript basic-memory:write_note
How many euros is 250 dollars? Work it out for me. | exchange-rate-mcp:exchange_rate calculator:calculate
Suggest a good Chinese dish for 3 people and show me the full recipe with ingredients. | howtocook-mcp:mcp_howtocook_whatToEat howtocook-mcp:mcp_howtocook_getRecipeById
I want to read the latest research on CRISPR base editing: find a few preprints, grab the best one and give me its text. | arxiv-mcp-server:search_papers arxiv-mcp-server:download_paper arxiv-mcp-server:read_paper
Spin up a postgres container and show me its startup output. | docker-mcp:create-container docker-mcp:get-logs
Log into my dashboard site with my username and password, then grab a picture of the page. | playwright:playwright_navigate playwright:playwright_fill playwright:playwright_click playwright:playwright_screenshot
Where is the closest place to charge my Tesla near 10 Downing Street, and how do I drive there from Paddington? | osm-mcp-server:geocode_address osm-mcp-server:find_ev_charging_stations osm-mcp-server:get_route_directions
Make me a short slide deck about our Q3 results with a table of the numbers, and save it as q3.pptx. | ppt:create_presentation ppt:add_slide ppt:add_table ppt:save_presentation
Who owns the site example.net, and who is behind the IP address and the network it sits on? | whois:whois_domain whois:whois_ip whois:whois_as
What's trending on Hacker News right now? Open the top story and show me what people are saying. | hackernews:getStories hackernews:getStoryWithComments
Is the crypto market fearful or greedy right now, and what does ether cost? | investor:get_crypto_fear_greed_index mcp-crypto-price:get-crypto-price
Turn my meeting notes file into a mind map picture. | filesystem:read_file mindmap:convert_markdown_to_mindmap
Lock the Word contract with a password and give me a PDF version of it too. | word-document-server:protect_document word-document-server:convert_to_pdf
Check what's in my Downloads folder and move the PDFs into a new folder called papers. | filesystem:list_directory filesystem:create_directory filesystem:move_file
Find out which LCK team is on top of the table and when their next game is. | opgg-mcp:esports-lol-team-standings opgg-mcp:esports-lol-schedules
Look up my summoner name, refresh the stats and show my last games. | opgg-mcp:lol-summoner-search opgg-mcp:lol-summoner-renewal opgg-mcp:lol-summoner-game-history
I have a list of 20 names; pick 5 at random for the raffle and give each winner an unguessable code. | random-number:random_sample random-number:secure_token_hex
Read the quarterly numbers from budget.xlsx and make a pie chart of spending per department. | excel:excel_read_sheet mcp-server-chart:generate_pie_chart
Find something about the Great Barrier Reef on Wikipedia and show me how the article is organised. | wikipedia:search_wikipedia wikipedia:get_sections
What's the newest Guava release, and which older versions are there? | maven-deps-server:get_latest_release maven-deps-server:list_maven_versions
Is there a study for type 1 diabetes I could join, and where does it take place? | biomcp:trial_searcher biomcp:trial_locations_getter
Check whether the BRAF V600E mutation is known to cause disease and find recent papers about it. | biomcp:variant_searcher biomcp:article_searcher
What's hot on Weibo and Zhihu today? | trends-hub:get-weibo-trending trends-hub:get-zhihu-trending
Set up a new repo here, add all the files and make the first commit. | git:git_init git:git_add git:git_commit
What day is it in Shanghai, and are there high speed trains from Guangzhou to Shenzhen that day? | 12306-mcp:get-current-date 12306-mcp:get-station-code-of-citys 12306-mcp:get-tickets
Tell my fortune from my birth date, 12 May 1990 at 10am, and whether today is a lucky day. | Bazi:buildBaziFromSolarDatetime Bazi:getChineseCalendar
Run the test suite in my terminal and tell me what it printed once it's finished. | desktop-commander:start_process desktop-commander:read_process_output
Something is hogging my CPU: show me what's running and get rid of it. | desktop-commander:list_processes desktop-commander:kill_process
Find every TODO comment in the src folder and open the file that has the most of them. | desktop-commander:search_code desktop-commander:read_file
Save the key facts about Marie Curie in my knowledge graph as a person with a few observations. | wikipedia:extract_key_facts memory:create_entities memory:add_observations
Which Valorant agents are strongest right now, and what team comp works on Bind? | opgg-mcp:valorant-meta-characters opgg-mcp:valorant-agents-composition-with-map
React vs Vue vs Svelte: how are their downloads doing over time and how do they score overall? | npm-sentinel-mcp:npmTrends npm-sentinel-mcp:npmScore
Find Starry Night in the Met's collection and show me everything about that painting. | met-museum:search-museum-objects met-museum:get-museum-object
Download this podcast episode from the link, load it and tell me how long it is. | music-analysis:download_from_url music-analysis:load music-analysis:get_duration
Figure out the beats and the key of the song I saved as song.mp3. | music-analysis:load music-analysis:beat_track music-analysis:chroma_cqt
Grab the page at this link as plain text and split it into 1000-line chunks. | npx_fetch:fetch_txt searxng:text_splitter
Show me what changed between the two versions of the policy text, then tidy up the indentation of the new one. | searxng:text_diff searxng:text_formatter
What has Apple paid out to shareholders over the years, and what did it earn last year? | yahoo-finance:get_dividends yahoo-finance:get_income_statement
Which big institutions hold Nvidia, and have people inside the company been selling? | investor:get_institutional_holders investor:get_insider_trades
Show me the list of Korean stocks, then the valuation ratios and market value of SK Hynix. | kospi-kosdaq:load_all_tickers kospi-kosdaq:get_stock_fundamental kospi-kosdaq:get_stock_market_cap
Draw a 500x500 white picture with a green square in the middle and give me the image. | painter:drawing_generateCanvas painter:drawing_fillRectangle painter:drawing_getCanvasPng
Put together a study plan: break 'learn Rust' into steps and tell me where to start. | taskmanager:request_planning taskmanager:get_next_task
Show me how to use the Ant Design Form and some sample code for it. | Ant Design Components:get-component-docs Ant Design Components:list-component-examples
I need a fancy animated button and a phone mockup for my landing page. | magicuidesign_mcp:getButtons magicuidesign_mcp:getDeviceMocks
Find a calendar icon and tell me how to use it in Flutter. | hugeicons:search_icons hugeicons:get_platform_usage
What's the weather at 48.85, 2.35 and what's the street address there? | weather:get_weather osm-mcp-server:reverse_geocode
We're three friends in different parts of town; suggest where to meet and find cafés around there. | osm-mcp-server:suggest_meeting_point osm-mcp-server:find_nearby_places
Give me a rundown of today's New York Times and BBC headlines. | trends-hub:get-nytimes-news trends-hub:get-bbc-news
Open my existing presentation, change the chart numbers on slide 3 and save it. | ppt:open_presentation ppt:update_chart_data ppt:save_presentation
Go through contract.docx, change 'ACME Ltd' to 'ACME GmbH' everywhere and make a PDF of it. | word-document-server:get_document_text word-document-server:search_and_replace word-document-server:convert_to_pdf
Look at the screenshot at this link and tell me what the error says, then look online for a fix. | image-extractor:extract_image_from_url duckduckgo-search:duckduckgo_web_search
Find the Yu-Gi-Oh card Dark Magician and show me its artwork. | ygocdb:search_cards ygocdb:get_card_image
Who are the developers everyone is following on GitHub this week, and which repos are hot? | mcp-github-trending:get_github_trending_developers mcp-github-trending:get_github_trending_repositories
Go to the product page, type my email in the newsletter box, hit Enter and check the browser console for errors. | playwright:playwright_navigate playwright:playwright_fill playwright:playwright_press_key playwright:playwright_console_logs
Update user 42 on our staging API with a PUT and then fetch it again with a GET to verify. | playwright:playwright_put playwright:playwright_get
What time is it for my colleague in Sydney, and when is 9am their time for me in Berlin? | time:get_current_time time:convert_time
Help me with today's LeetCode problem: show me the statement and my previous attempts. | coin-flip:get-daily-challenge coin-flip:get-user-submissions
Find open government data on wildfire risk and show me what files one of those datasets has. | datagov:package_search datagov:package_show
Is the neighbourhood around Alexanderplatz nice to live in, and are there good schools nearby? | osm-mcp-server:analyze_neighborhood osm-mcp-server:find_schools_nearby
Delete my old draft about the offsite and tell me what I've been working on lately. | basic-memory:delete_note basic-memory:recent_activity
Do due diligence on the Arbitrum token and pull in the content of its docs page. | web3-research-mcp:research-token web3-research-mcp:fetch-content
Make an org chart of our team and a word cloud of our company values. | mcp-server-chart:generate_organization_chart mcp-server-chart:generate_word_cloud_chart
Turn this HTML newsletter into markdown and pull out all its image links. | searxng:html_to_markdown searxng:html_extract_resources
Combine chapter1.pdf and chapter2.pdf into one file and then read me the combined text. | searxng:pdf_merger pdf-reader-mcp:read_pdf
Does lodash ship TypeScript types, and who looks after the package? | npm-sentinel-mcp:npmTypes npm-sentinel-mcp:npmMaintainers
Record my clicks as a Playwright test: open the login page, click sign in, then finish the recording. | playwright:start_codegen_session playwright:playwright_navigate playwright:playwright_click playwright:end_codegen_session
How has Bitcoin moved over the last 90 days, and on which exchanges does most of its trading happen? | mcp-crypto-price:get-historical-analysis mcp-crypto-price:get-market-analysis
Write down today's top 5 Hacker News titles in a note. | hackernews:getStories basic-memory:write_note
What kinds of dishes are there? List the desserts and show me how to make mango pudding. | howtocook-mcp:mcp_howtocook_getRecipesByCategory howtocook-mcp:mcp_howtocook_getRecipeById
Tell me about the Wuthering Waves character Jinhsi: her background story and how to build her. | wuwa-mcp:get_character_profile wuwa-mcp:get_character_info
Think through how to migrate our database step by step, then write the plan to migration.md. | sequential-thinking:sequentialthinking filesystem:write_file
"""

if __name__ == "__main__":
    write_sets("agent-search", AGENT_SEARCHES, "as")
    write_sets("agent-tasks", AGENT_TASKS, "at")
