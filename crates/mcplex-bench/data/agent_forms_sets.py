"""Writes the agent-forms development query sets (issue #34; see README.md in this directory).

These are search strings in the forms agents really type into tool_search, not sentences: a guess
at the kind of server before `;` ("weather or forecast service; ..."), alternatives joined by
`or`, steps joined by `+`, `then`, `and`, `->` or `&`, with concrete names, paths and ids
(`~/notes/todo.md`, `octocat/hello-world`, `AAPL`), often in words the catalog does not use, and
with the server kind often guessed wrongly or vaguely ("database; list my notes").

Every query is written by hand below, one per line:

    FIT TEXT | LABELS

- TEXT is the query as typed, with markers the script strips: `{...}` around the server-kind
  guess (always at the start, followed by "; ") and `[...]` around each step of a multi-step
  query. A query without `[...]` is one step: the text after the kind.
- LABELS gives, per step and in order, the tools that answer it, groups separated by " / ";
  equivalent tools of different servers are all labels of the same step. `=name` stands for a
  group of equivalent tools defined in the set's ALIASES (written out in the JSON).
- FIT says how well the kind guess fits: R right (names the kind of server that serves every
  step), P partly (right for some steps only), V vague (names no kind: "api", "tool",
  "online service"), W wrong (names a different kind of server), - no guess.

The script checks every label against its catalog, refuses duplicate queries, and splits each
set by the first byte of the SHA-256 of the query text: even -> `dev` (tune on it), odd ->
`heldout` (report only). Output rows are the existing sets' format (`id`, `query`, `labels` with
`tool_id` and `relevance`) plus: each label's `step` (0-based index of the part it answers);
`parts` (the text of each step, without the kind guess); `kind` (the guess, or null);
`kind_correct` (true when FIT is R, false for P/V/W, null without a guess); `kind_fit` (the FIT
letter spelled out) and `form` ("single", "alternatives": one step whose text holds " or ",
"multi": 2-4 steps).
Run: python3 crates/mcplex-bench/data/agent_forms_sets.py
"""

import hashlib
import json
import pathlib
import re

HERE = pathlib.Path(__file__).parent
REPO = HERE.parent.parent.parent

CATALOGS = {
    "livemcp527": HERE / "livemcp527.tools.json",
    "metatool199": HERE / "metatool199.tools.json",
    # ref45 lives in the fixtures crate (embedded in the --demo gateway); not copied here.
    "ref45": REPO / "crates" / "mcplex-fixtures" / "data" / "ref45.tools.json",
}

FITS = {"R": "right", "P": "partial", "V": "vague", "W": "wrong", "-": None}

# Groups of equivalent tools in livemcp527: servers that do the same thing.
LIVEMCP_ALIASES = {
    "write": "filesystem:write_file desktop-commander:write_file",
    "read": "filesystem:read_file desktop-commander:read_file text-editor:get_text_file_contents",
    "readmany": "filesystem:read_multiple_files desktop-commander:read_multiple_files",
    "ls": "filesystem:list_directory desktop-commander:list_directory",
    "mkdir": "filesystem:create_directory desktop-commander:create_directory",
    "mv": "filesystem:move_file desktop-commander:move_file",
    "find": "filesystem:search_files desktop-commander:search_files",
    "stat": "filesystem:get_file_info desktop-commander:get_file_info okppt:get_file_info",
    "edit": "filesystem:edit_file desktop-commander:edit_block text-editor:edit_text_file_contents",
    "websearch": "duckduckgo-search:duckduckgo_web_search bing-cn-mcp:bing_search web3-research-mcp:search",
    "page": "fetch:fetch npx_fetch:fetch_markdown npx_fetch:fetch_txt web3-research-mcp:fetch-content",
    "nav": "playwright:playwright_navigate puppeteer:puppeteer_navigate",
    "click": "playwright:playwright_click puppeteer:puppeteer_click",
    "fill": "playwright:playwright_fill puppeteer:puppeteer_fill",
    "shot": "playwright:playwright_screenshot puppeteer:puppeteer_screenshot",
    "js": "playwright:playwright_evaluate puppeteer:puppeteer_evaluate",
    "hover": "playwright:playwright_hover puppeteer:puppeteer_hover",
    "select": "playwright:playwright_select puppeteer:puppeteer_select",
    "quote": "yahoo-finance:get_current_stock_price yfmcp:get_ticker_info investor:get_ticker_data",
    "history": "yahoo-finance:get_historical_stock_prices yfmcp:get_price_history investor:get_price_history",
    "stocknews": "yahoo-finance:get_news yfmcp:get_ticker_news",
    "income": "yahoo-finance:get_income_statement investor:get_financial_statements",
    "cashflow": "yahoo-finance:get_cashflow investor:get_financial_statements",
    "crypto": "mcp-crypto-price:get-crypto-price Asset_Price_MCP:get_asset_price",
    "arxiv": "arxiv-mcp-server:search_papers mcp-simple-arxiv:search_papers",
    "pdf": "pdf-reader-mcp:read_pdf searxng:document_reader",
    "docx2pdf": "word-document-server:convert_to_pdf searxng:docx_to_pdf",
    "docxtext": "word-document-server:get_document_text searxng:document_reader",
    "xlsread": "excel:excel_read_sheet searxng:excel_read",
    "mindmap": "mcp-server-chart:generate_mind_map mindmap:convert_markdown_to_mindmap",
    "slide": "ppt:add_slide okppt:insert_blank_slide okppt:add_slide_with_layout",
    "pptinfo": "ppt:get_presentation_info okppt:get_pptx_info",
    "html2md": "searxng:html_to_markdown searxng:format_convert",
}

# Queries over livemcp527, server by server (a query is listed under the first server it needs).
LIVEMCP = """
R {china railway 12306}; [find station code for Hangzhou] + [seats left on trains from Hangzhou to Nanjing tomorrow] | 12306-mcp:get-station-code-of-citys / 12306-mcp:get-tickets
W {flight search}; Shanghai to Guangzhou high speed rail tickets on friday | 12306-mcp:get-tickets
R {train timetable}; which stops does G7 make between Beijing and Shanghai | 12306-mcp:get-train-route-stations
- transfer train Chengdu to Lhasa or connecting trains with one change | 12306-mcp:get-interline-tickets
V {api}; [what is today's date in Beijing] then [train tickets Xi'an to Chengdu for the day after] | 12306-mcp:get-current-date time:get_current_time / 12306-mcp:get-tickets
R {rail station lookup}; station details for telecode VNP | 12306-mcp:get-station-by-telecode
R {12306}; all train stations in Shenzhen or station codes for Shenzhen North and Futian | 12306-mcp:get-stations-code-in-city 12306-mcp:get-station-code-by-names
R {react ui library docs}; antd Select component props | Ant Design Components:get-component-docs
W {npm registry}; what changed in antd Form between 4.x and 5.x | Ant Design Components:get-component-changelog
R {component library}; [list all ant design components] + [example code for the Upload component] | Ant Design Components:list-components / Ant Design Components:list-component-examples
- antd modal examples or demo snippets for Drawer | Ant Design Components:list-component-examples
W {stock market data}; gold price per ounce today | Asset_Price_MCP:get_asset_price
R {commodity or crypto prices}; current silver and platinum price | Asset_Price_MCP:get_asset_price
P {price feed}; [bitcoin price in usd] + [convert usd to NOK] | =crypto / exchange-rate-mcp:exchange_rate
R {chinese astrology}; bazi chart for a man born 1990-05-17 14:30 | Bazi:getBaziDetail Bazi:buildBaziFromSolarDatetime
V {tool}; is 2025-02-14 an auspicious day for a wedding in the almanac | Bazi:getChineseCalendar
R {fortune telling}; eight characters from lunar birthday 1988 month 3 day 12 8am female | Bazi:buildBaziFromLunarDatetime Bazi:getBaziDetail
W {time zone converter}; which gregorian datetimes match pillars 癸卯 甲寅 丙午 戊子 | Bazi:getSolarTimes
R {library docs}; [resolve context7 id for tanstack query] + [fetch its docs on useMutation] | Context7:resolve-library-id / Context7:get-library-docs
W {npm registry}; latest docs for prisma client findMany | Context7:resolve-library-id Context7:get-library-docs
- up to date react-router v7 loader docs or api reference for createBrowserRouter | Context7:resolve-library-id Context7:get-library-docs
W {github}; documentation for the tiangolo/fastapi repo, dependency injection section | mcp-deepwiki:deepwiki_fetch Context7:resolve-library-id Context7:get-library-docs
R {image metadata}; write keywords "sunset, beach" and a caption into ~/Pictures/IMG_2041.jpg | MetaTagGenie:writeImageMetadata
W {file system}; tag photo ~/photos/wedding/0012.jpg with people Anna and Tom, location Lisbon | MetaTagGenie:writeImageMetadata
R {photo tools}; [describe what's in ~/shots/receipt.png] + [save that description into the image's metadata] | image-extractor:extract_image_from_file / MetaTagGenie:writeImageMetadata
R {vacation rental}; 2 bedroom places in Lisbon for Aug 10-17, 4 guests | airbnb:airbnb_search
W {hotel booking}; amenities and house rules of listing 53120987 | airbnb:airbnb_listing_details
P {airbnb}; [stays near Shibuya under $150/night] + [route from there to Tokyo Station] | airbnb:airbnb_search / osm-mcp-server:get_route_directions
- airbnb or rental apartment in Kyoto next weekend | airbnb:airbnb_search
R {paper search}; arxiv papers on speculative decoding from 2024 | =arxiv
R {arxiv}; [download 2310.06825] then [read the full text] | arxiv-mcp-server:download_paper / arxiv-mcp-server:read_paper
W {pdf reader}; list papers I've already saved locally from arxiv | arxiv-mcp-server:list_papers
W {google scholar}; abstract and authors of arXiv:1706.03762 | mcp-simple-arxiv:get_paper_data
R {arxiv}; what does category cs.CL mean or list arxiv categories | mcp-simple-arxiv:list_categories
V {research}; [search arxiv for mamba state space models] + [get the pdf of the top hit] + [write a summary to ~/notes/mamba.md] | =arxiv / arxiv-mcp-server:download_paper / =write
R {arxiv}; refresh the category taxonomy cache | mcp-simple-arxiv:update_categories
W {database}; list my notes about the q3 roadmap | basic-memory:search_notes
R {notes app}; [create note "standup 2025-06-03" in folder meetings] + [append a link to the roadmap note] | basic-memory:write_note / basic-memory:edit_note
R {knowledge base}; append "shipped v2" to the note release-log | basic-memory:edit_note
W {file system}; delete the note called old-ideas | basic-memory:delete_note
R {notes}; what did I change in my notes since monday | basic-memory:recent_activity
R {basic memory}; [switch to project work-notes] + [show which project is active] | basic-memory:switch_project / basic-memory:get_current_project
W {diagram tool}; obsidian canvas connecting the auth, billing and search notes | basic-memory:canvas
- sync status of my notes or is indexing finished | basic-memory:sync_status
V {storage}; [new notes project "thesis" at ~/thesis-notes] then [make it the default] | basic-memory:create_memory_project / basic-memory:set_default_project
R {notes}; view note meeting-2025-05-12 nicely formatted | basic-memory:view_note basic-memory:read_note
W {file system}; raw content of projects/alpha.md in my knowledge base | basic-memory:read_content
R {basic-memory}; which knowledge base projects exist | basic-memory:list_memory_projects
R {notes}; move note "draft pricing" to archive/2024 | basic-memory:move_note
V {context}; continue from memory://projects/alpha/decisions | basic-memory:build_context
W {file system}; folders inside my knowledge base, 2 levels deep | basic-memory:list_directory
R {notes}; remove the knowledge project "scratch" from config | basic-memory:delete_project
R {search engine}; 必应 上海 暴雨 预警 | =websearch
R {bing}; [search "rust async cancellation"] + [open result 3] | =websearch / bing-cn-mcp:fetch_webpage
W {news}; web results for "EU AI act fines" | =websearch
R {biomedical literature}; pubmed articles on GLP-1 and pancreatitis risk | biomcp:article_searcher biomcp:search
W {search engine}; recruiting trials for triple negative breast cancer in Boston | biomcp:trial_searcher biomcp:search
R {clinical trials}; [details of NCT05123456] + [where are its sites] + [primary outcome results] | biomcp:trial_getter biomcp:fetch / biomcp:trial_locations_getter / biomcp:trial_outcomes_getter
R {variant database}; rs113488022 clinical significance | biomcp:variant_getter biomcp:variant_searcher biomcp:fetch
V {science api}; predict regulatory effect of chr7:140753336 A>T with alphagenome | biomcp:alphagenome_predictor
- plan a biomedical research approach step by step | biomcp:think sequential-thinking:sequentialthinking
W {wikipedia}; full text of PMID 34567890 | biomcp:article_getter biomcp:fetch
R {clinicaltrials.gov}; inclusion criteria and arms of NCT04280705 or its protocol | biomcp:trial_protocol_getter
R {trials}; publications from trial NCT03548935 | biomcp:trial_references_getter
R {math}; 1499 * 0.85 + 12.5 | calculator:calculate
W {spreadsheet}; compute (3.2e6 / 12) * 1.07 | calculator:calculate
P {calculator}; [USD to EUR rate] + [multiply 1234.50 by it] | exchange-rate-mcp:exchange_rate / calculator:calculate
- what's a 15% tip on 86.40 | calculator:calculate
R {chess engine}; [start a new game as black] + [play e5] + [show the board] | chess:new_game / chess:make_move / chess:get_board_visualization
V {game server}; legal moves for the side to play | chess:get_valid_moves
R {chess}; whose turn is it | chess:get_turn
W {database}; position with a bishop on a3 in the pgn of Carlsen vs Caruana 2018 | chess:find_position_in_pgn
- chess board image or picture of the current position | chess:get_board_visualization
R {leetcode}; daily coding problem | coin-flip:get-daily-challenge
R {coding practice platform}; [problem two-sum statement] + [last 10 submissions of user neal_wu] | coin-flip:get-problem / coin-flip:get-user-submissions
W {github}; contest rating for leetcode user lee215 | coin-flip:get-user-contest-ranking
V {api}; hard graph problems tagged bfs | coin-flip:search-problems
R {leetcode}; weekly-contest-400 details or problems of weekly contest 400 | coin-flip:get-contest-details
W {social network}; leetcode profile of user votrubac | coin-flip:get-user-profile
R {open data portal}; datasets about wildfire smoke in California | datagov:package_search
W {wikipedia}; data.gov dataset details for "electric-vehicle-population-data" | datagov:package_show
R {government data}; [search data.gov for school lunch nutrition] + [full metadata of the first dataset] | datagov:package_search / datagov:package_show
V {catalog}; list of tags or groups on data.gov | datagov:tag_list datagov:group_list
R {terminal or shell}; run `npm test` in ~/code/app | desktop-commander:start_process
W {docker}; [start a python3 -i repl] + [send "import pandas; print(pandas.__version__)"] + [read its output] | desktop-commander:start_process / desktop-commander:interact_with_process / desktop-commander:read_process_output
R {process manager}; [what's using the most cpu] then [kill pid 48213] | desktop-commander:list_processes / desktop-commander:kill_process
V {system}; [list active terminal sessions] + [force stop session 3] | desktop-commander:list_sessions / desktop-commander:force_terminate
R {code search}; grep for "TODO(auth)" across src/ | desktop-commander:search_code
W {git}; find files named *.env under ~/projects | =find
R {desktop commander}; [show config] + [set fileReadLineLimit to 2000] | desktop-commander:get_config / desktop-commander:set_config_value
V {analytics}; usage stats of my tool calls | desktop-commander:get_usage_stats
- send feedback about desktop commander | desktop-commander:give_feedback_to_desktop_commander
R {file editor}; replace "port: 8080" with "port: 9090" in ~/app/config.yaml | =edit
R {filesystem}; read README.md, CHANGELOG.md and LICENSE at once | =readmany
R {container runtime}; run nginx:alpine on port 8080 | docker-mcp:create-container
W {kubernetes}; logs of container web-1 | docker-mcp:get-logs
R {docker}; [deploy compose stack from ~/stack/docker-compose.yml] + [list containers] + [tail logs of db] | docker-mcp:deploy-compose / docker-mcp:list-containers / docker-mcp:get-logs
V {devops}; which containers are up or list stopped containers | docker-mcp:list-containers
W {shell}; spin up redis:7 named cache | docker-mcp:create-container
R {web search}; best budget mechanical keyboard 2025 | =websearch
W {wikipedia}; news about the Suez canal this week | =websearch
- duckduckgo or google "site:docs.rs tokio select" | =websearch
V {internet}; [search for the official Vite docs url] + [fetch the config page] | =websearch / =page
R {spreadsheet}; read sheet Q3 from ~/reports/sales.xlsx | =xlsread
W {database}; write rows into ~/data/inventory.xlsx sheet Stock A2:D20 | excel:excel_write_to_sheet
R {excel}; [list tabs of budget.xlsx] + [copy sheet 2024 to 2025] + [make A1:F40 a table] | excel:excel_describe_sheets / excel:excel_copy_sheet / excel:excel_create_table
V {office}; what sheets does ~/Downloads/export.xlsx have | excel:excel_describe_sheets
P {excel}; [read column B from prices.xlsx] then [line chart of it] | =xlsread / mcp-server-chart:generate_line_chart
R {currency converter}; GBP to JPY rate | exchange-rate-mcp:exchange_rate
W {stock quote}; how many Swiss francs for one euro | exchange-rate-mcp:exchange_rate
- fx rate or exchange rate SEK NOK yesterday | exchange-rate-mcp:exchange_rate
P {finance}; [EUR to USD rate] + [price of AAPL] + [AAPL price in euros] | exchange-rate-mcp:exchange_rate / =quote / calculator:calculate
R {http client}; fetch https://example.com/pricing as markdown | =page
W {rss reader}; get the text of https://blog.rust-lang.org/releases | =page
- curl https://api.github.com/repos/octocat/hello-world or get that json | npx_fetch:fetch_json playwright:playwright_get fetch:fetch
R {web fetch}; raw html of https://news.ycombinator.com | npx_fetch:fetch_html fetch:fetch
R {file system}; [write file ~/notes/todo.md] + [create markdown document ~/notes/week-plan.md] | =write / =write
R {filesystem}; tree of ~/code/mcplex/crates | filesystem:directory_tree
W {git}; which directories am I allowed to touch | filesystem:list_allowed_directories
R {files}; largest files in ~/Downloads | filesystem:list_directory_with_sizes
V {storage}; [mkdir ~/backup/2025-06] + [move ~/Downloads/invoice.pdf there] | =mkdir / =mv
R {file system}; rename report_final_v3.docx to report.docx | =mv
W {search engine}; find *.log files under /var/app | =find
R {fs}; created and modified time of ~/thesis/draft.tex | =stat
- read ~/.ssh/config or show contents of /etc/hosts | =read
R {local files}; [list ~/projects/site] then [read package.json and tsconfig.json] | =ls / =readmany
R {filesystem}; ls ~/Desktop | =ls
V {helper}; change line 12 of ~/app/.env to DEBUG=false | =edit
R {version control}; [git status] + [stage src/main.rs] + [commit "fix panic on empty query"] | git:git_status / git:git_add / git:git_commit
W {code hosting platform}; branches in my local repo | git:git_branch
R {git}; diff of staged changes | git:git_diff_staged
R {git}; [create branch feature/search-forms from main] then [switch to it] | git:git_create_branch / git:git_checkout
W {github}; last 20 commits on this repo | git:git_log
R {git}; show commit 9b55ca3 | git:git_show
V {tool}; unstage everything | git:git_reset
R {vcs}; what's changed but not staged or unstaged diff | git:git_diff_unstaged git:git_status
R {git}; init repo in ~/code/newproj | git:git_init
V {diff tool}; compare main and release/1.2 | git:git_diff
R {hacker news}; top stories right now | hackernews:getStories
W {reddit}; comments on HN item 40123456 | hackernews:getStoryWithComments hackernews:getComments hackernews:getCommentTree
R {hn}; [search hn for "sqlite in production"] + [open the top story with comments] | hackernews:search / hackernews:getStoryWithComments
W {social network}; karma and about of user pg | hackernews:getUser
R {news aggregator}; submissions by user dang | hackernews:getUserSubmissions
- hn comment 39876543 or single comment by id | hackernews:getComment
V {forum}; show hn posts this week | hackernews:getStories
R {recipe}; what to cook for 4 people tonight | howtocook-mcp:mcp_howtocook_whatToEat
W {food delivery}; vegetarian meal plan for a week, no peanuts, 2 people | howtocook-mcp:mcp_howtocook_recommendMeals
R {cooking}; [soup recipes] + [full recipe for 西红柿鸡蛋汤] | howtocook-mcp:mcp_howtocook_getRecipesByCategory / howtocook-mcp:mcp_howtocook_getRecipeById
W {database}; every recipe you have | howtocook-mcp:mcp_howtocook_getAllRecipes
R {icon library}; icons for settings, bell, user | hugeicons:search_icons
W {component library}; how to use hugeicons in flutter | hugeicons:get_platform_usage
- full icon list or all available icons | hugeicons:list_icons
R {ui kit}; [search icon "shopping cart"] + [shadcn button component details] | hugeicons:search_icons / shadcn-ui-server:get_component_details
R {vision}; what's in https://example.org/img/diagram.png | image-extractor:extract_image_from_url
W {pdf reader}; ocr the text from ~/scans/receipt_0412.png | image-extractor:extract_image_from_file
V {tool}; analyze this base64 screenshot from the clipboard | image-extractor:extract_image_from_base64
P {browser automation}; [open https://status.example.com] + [take screenshot] + [read what the screenshot says] | =nav / =shot / image-extractor:extract_image_from_base64 image-extractor:extract_image_from_file
R {market sentiment}; CNN fear and greed index last 30 days | investor:get_cnn_fear_greed_index
W {crypto exchange}; crypto fear & greed this week | investor:get_crypto_fear_greed_index
R {stock data}; insider trades at NVDA | investor:get_insider_trades
R {finance api}; [top institutional holders of TSLA] + [quarterly income statement] | investor:get_institutional_holders / =income
W {trading bot}; AAPL call options expiring 2025-07-18 strike 200-230 | investor:get_options
R {stocks}; earnings history for MSFT or past EPS surprises | investor:get_earnings_history yahoo-finance:get_earning_dates
R {investing}; 5 year price history of VOO | =history
R {korean stock market}; samsung electronics 005930 ohlcv for May 2025 | kospi-kosdaq:get_stock_ohlcv
W {yahoo finance}; market cap of SK hynix 000660 since January | kospi-kosdaq:get_stock_market_cap
R {krx}; [load all KOSPI tickers] + [PER and PBR of Naver] | kospi-kosdaq:load_all_tickers / kospi-kosdaq:get_stock_fundamental
V {data}; foreign vs institutional trading volume for 035720 last week | kospi-kosdaq:get_stock_trading_volume
R {react animation components}; magic ui shimmer button code | magicuidesign_mcp:getButtons
W {icon library}; animated grid pattern background | magicuidesign_mcp:getBackgrounds
R {magic ui}; [list all components] + [iphone 15 pro device mockup] | magicuidesign_mcp:getUIComponents / magicuidesign_mcp:getDeviceMocks
V {frontend}; aurora text or number ticker animation | magicuidesign_mcp:getTextAnimations
R {ui library}; border beam or meteors effect | magicuidesign_mcp:getSpecialEffects
W {css framework}; bento grid and marquee components | magicuidesign_mcp:getComponents
- blur fade in animation snippet | magicuidesign_mcp:getAnimations
R {maven central}; latest release of com.fasterxml.jackson.core:jackson-databind | maven-deps-server:get_latest_release
W {npm registry}; does org.slf4j:slf4j-api 2.0.13 exist | maven-deps-server:check_maven_version_exists
R {java dependencies}; all versions of io.netty:netty-all newest first | maven-deps-server:list_maven_versions
R {package registry}; [latest spring-boot-starter-web] + [latest npm version of react] | maven-deps-server:get_latest_release / npm-sentinel-mcp:npmLatest
R {crypto}; ETH price and 24h volume | mcp-crypto-price:get-crypto-price
W {stock market}; solana price trend over the last 30 days | mcp-crypto-price:get-historical-analysis
V {api}; which exchanges trade the most BTC | mcp-crypto-price:get-market-analysis
R {repo docs}; deepwiki for vercel/next.js | mcp-deepwiki:deepwiki_fetch
W {wikipedia}; how is the tokio-rs/tokio scheduler structured | mcp-deepwiki:deepwiki_fetch
- explain architecture of github repo facebook/react or deepwiki page | mcp-deepwiki:deepwiki_fetch
R {github}; trending rust repositories today | mcp-github-trending:get_github_trending_repositories
V {dev community}; trending developers this week | mcp-github-trending:get_github_trending_developers
P {code hosting platform}; [trending python repos] + [deepwiki overview of the first one] | mcp-github-trending:get_github_trending_repositories / mcp-deepwiki:deepwiki_fetch
R {charting}; bar chart of revenue by region: NA 120, EU 95, APAC 70 | mcp-server-chart:generate_bar_chart mcp-server-chart:generate_column_chart
W {excel}; pie chart of budget split rent 40 food 25 fun 10 savings 25 | mcp-server-chart:generate_pie_chart
R {visualization}; sankey of traffic sources to signup to paid | mcp-server-chart:generate_sankey_chart
R {diagram}; fishbone for causes of late deliveries | mcp-server-chart:generate_fishbone_diagram
R {mermaid}; flowchart of the login process | mcp-server-chart:generate_flow_diagram mermaid-validator:validateMermaid
R {chart}; org chart for CEO -> CTO, CFO; CTO -> 3 team leads | mcp-server-chart:generate_organization_chart
- word cloud or tag cloud from these review texts | mcp-server-chart:generate_word_cloud_chart
R {charts}; [histogram of response times] + [boxplot by endpoint] | mcp-server-chart:generate_histogram_chart / mcp-server-chart:generate_boxplot_chart
W {maps api}; map with pins for our 12 store locations | mcp-server-chart:generate_pin_map
R {data viz}; radar chart comparing 3 laptops on price, battery, weight, screen, cpu | mcp-server-chart:generate_radar_chart
V {graphics}; venn of users on iOS, android, web | mcp-server-chart:generate_venn_chart
R {chart}; dual axis: monthly revenue bars and margin % line | mcp-server-chart:generate_dual_axes_chart
P {geo}; [route from Berlin Hbf to Potsdam] + [draw the route on a map] | osm-mcp-server:get_route_directions / mcp-server-chart:generate_path_map
W {sql}; funnel: visits 10000, signups 1200, paid 150 | mcp-server-chart:generate_funnel_chart
R {charting}; liquid gauge showing 73% capacity | mcp-server-chart:generate_liquid_chart
- china province map of sales or district map | mcp-server-chart:generate_district_map
R {plot}; area chart of daily active users for June | mcp-server-chart:generate_area_chart
V {viz}; network graph of who-follows-whom among 8 accounts | mcp-server-chart:generate_network_graph
R {stats charts}; violin plot of salaries per department | mcp-server-chart:generate_violin_chart
P {file system}; [sizes of folders in ~/Library] + [treemap of them] | filesystem:list_directory_with_sizes / mcp-server-chart:generate_treemap_chart
R {charts}; scatter of height vs weight | mcp-server-chart:generate_scatter_chart
R {knowledge graph}; add entities Alice (person) and Acme (company) | memory:create_entities
W {database}; relation Alice works_at Acme | memory:create_relations
R {memory}; [search memory for "Project Falcon"] + [open nodes Falcon and Bob] | memory:search_nodes / memory:open_nodes
V {storage}; dump entire knowledge graph | memory:read_graph
R {kg}; add observation "prefers email" to entity Bob | memory:add_observations
W {file system}; delete entity Temp-Project and its relations | memory:delete_entities
R {graph memory}; [remove observation "lives in Oslo" from Carol] + [delete relation Carol manages Dave] | memory:delete_observations / memory:delete_relations
R {diagram validator}; check this mermaid: graph TD; A-->B | mermaid-validator:validateMermaid
W {markdown linter}; does my sequenceDiagram syntax render | mermaid-validator:validateMermaid
- render mermaid to svg or validate gantt chart code | mermaid-validator:validateMermaid
R {museum}; met objects by Vermeer with images | met-museum:search-museum-objects
W {wikipedia}; met museum object 436535 details | met-museum:get-museum-object
R {art collection api}; [list departments at the Met] + [search Egyptian Art for cats] | met-museum:list-departments / met-museum:search-museum-objects
R {mind map}; turn this markdown outline into a mindmap | =mindmap
W {presentation}; [read ~/notes/plan.md] + [make it a mind map] | =read / =mindmap
- brainstorm map or mind map of project risks | =mindmap
R {audio analysis}; bpm of ~/music/track01.mp3 | music-analysis:tempo
P {youtube}; [download audio of https://youtu.be/dQw4w9WgXcQ] + [beat positions] | music-analysis:download_from_youtube / music-analysis:beat_track
W {video editor}; how long is ~/audio/interview.wav in seconds | music-analysis:get_duration
R {music ml}; [load clip.wav from 30s for 10s] + [mfcc features] + [chroma] | music-analysis:load / music-analysis:mfcc / music-analysis:chroma_cqt
V {downloader}; grab https://cdn.example.com/samples/loop.ogg to disk | music-analysis:download_from_url
- key or chroma profile of song.flac | music-analysis:chroma_cqt
R {npm}; is moment deprecated or alternatives to moment | npm-sentinel-mcp:npmDeprecated npm-sentinel-mcp:npmAlternatives
R {package registry}; compare zustand vs jotai vs redux downloads | npm-sentinel-mcp:npmCompare npm-sentinel-mcp:npmTrends
W {security scanner}; known vulnerabilities in lodash 4.17.20 | npm-sentinel-mcp:npmVulnerabilities
R {npm}; [bundle size of date-fns] + [does it ship typescript types] | npm-sentinel-mcp:npmSize / npm-sentinel-mcp:npmTypes
W {github}; readme of the express package | npm-sentinel-mcp:npmPackageReadme
V {registry}; who maintains left-pad | npm-sentinel-mcp:npmMaintainers
R {node packages}; are the licenses of lodash, chart.js and highcharts compatible | npm-sentinel-mcp:npmLicenseCompatibility
R {npm}; [search npm for "markdown parser"] + [quality score of marked] + [maintenance of markdown-it] | npm-sentinel-mcp:npmSearch / npm-sentinel-mcp:npmScore npm-sentinel-mcp:npmQuality / npm-sentinel-mcp:npmMaintenance
W {changelog generator}; what changed in the vite 5 release history | npm-sentinel-mcp:npmChangelogAnalysis npm-sentinel-mcp:npmLatest
R {npm}; dependencies of next or devDependencies list | npm-sentinel-mcp:npmDeps
V {stats}; github stars and open issues of the axios package repo | npm-sentinel-mcp:npmRepoStats
R {npm}; all published versions of typescript | npm-sentinel-mcp:npmVersions
R {fetch}; https://jsonplaceholder.typicode.com/todos/1 as json | npx_fetch:fetch_json playwright:playwright_get fetch:fetch
W {wikipedia}; plain text of https://www.gnu.org/licenses/gpl-3.0.txt | =page
R {web scraper}; [fetch html of https://shop.example.com/p/123] + [extract image links from it] | npx_fetch:fetch_html fetch:fetch / searxng:html_extract_resources
V {downloader}; [page https://example.com/docs as html] + [convert to markdown] + [save to ~/docs/example.md] | npx_fetch:fetch_html fetch:fetch / =html2md / =write
R {powerpoint}; [save this svg code as slide1.svg] + [insert it into ~/decks/pitch.pptx slide 2] | okppt:save_svg_code / okppt:insert_svg
W {image editor}; convert logo.svg to png | okppt:convert_svg_to_png
R {pptx}; how many slides in ~/decks/q2.pptx | =pptinfo
V {office}; delete slide 4 of review.pptx | okppt:delete_slide
R {slides}; [analyze the layouts of template.pptx] + [add slide with layout "Title and Content"] + [set placeholder 1 to "Agenda"] | okppt:analyze_presentation_layouts / =slide / okppt:set_placeholder_value ppt:populate_placeholder
R {file system}; list svg files in ~/decks/assets | okppt:list_files =ls =find
R {ppt}; copy slide 3 with its svg from a.pptx into b.pptx | okppt:copy_svg_slide
V {design}; clear the placeholders on slides 2-5 of draft.pptx | okppt:clear_placeholders_from_slides
- prompt for designing svg slides or svg design master prompt | okppt:svg_prompt
R {pptx}; insert blank slide at position 6 | =slide
R {league of legends stats}; rank and winrate of summoner Faker#KR1 | opgg-mcp:lol-summoner-search
W {twitch}; recent matches of summoner Doublelift#NA1 | opgg-mcp:lol-summoner-game-history
R {op.gg}; [refresh summoner data for Caps#EUW] + [show his last 20 games] | opgg-mcp:lol-summoner-renewal / opgg-mcp:lol-summoner-game-history
R {lol}; Ahri mid build, runes and counters | opgg-mcp:lol-champion-analysis opgg-mcp:lol-champion-meta-data
V {gaming}; brawl mode champion tier list | opgg-mcp:lol-brawl-champion-tier-rank
R {esports}; [LCK standings] + [upcoming LCK matches] | opgg-mcp:esports-lol-team-standings / opgg-mcp:esports-lol-schedules
W {game store}; champion skins on sale this week | opgg-mcp:lol-champion-skin-sale
R {tft}; [current meta comps] + [item build for Jinx] | opgg-mcp:tft-meta-trend-deck-list / opgg-mcp:tft-champion-item-build
V {game helper}; what does Spatula + Recurve Bow make in tft | opgg-mcp:tft-meta-item-combinations
R {tft}; which champion should hold Guinsoo's Rageblade or best carry for rageblade | opgg-mcp:tft-recommend-champion-for-item
- tft playstyle notes for Kai'Sa | opgg-mcp:tft-play-style-comment
R {valorant tracker}; agent comps on Ascent | opgg-mcp:valorant-agents-composition-with-map
W {steam}; valorant leaderboard for ap region | opgg-mcp:valorant-leaderboard
R {valorant}; [match history of TenZ#0505] + [meta agents this patch] | opgg-mcp:valorant-player-match-history / opgg-mcp:valorant-meta-characters opgg-mcp:valorant-characters-statistics
V {stats}; map pick rates valorant | opgg-mcp:valorant-meta-maps
R {lol}; best Yasuo players leaderboard | opgg-mcp:lol-champion-leader-board
R {league}; top lane winrates and banrates | opgg-mcp:lol-champion-positions-data
R {maps}; coordinates of 221B Baker Street London | osm-mcp-server:geocode_address
W {weather}; what's at 48.8584, 2.2945 | osm-mcp-server:reverse_geocode
R {geo}; [geocode Alexanderplatz] + [cafes within 500m] | osm-mcp-server:geocode_address / osm-mcp-server:find_nearby_places osm-mcp-server:search_category
V {travel}; ev chargers near Gare de Lyon | osm-mcp-server:find_ev_charging_stations
R {openstreetmap}; parking garages near Zurich HB | osm-mcp-server:find_parking_facilities
W {real estate}; primary schools near 10 Downing St | osm-mcp-server:find_schools_nearby
R {maps}; commute from Oakland to SF Financial District or drive time | osm-mcp-server:analyze_commute osm-mcp-server:get_route_directions
V {location api}; where should 3 friends from Brooklyn, Hoboken and Astoria meet | osm-mcp-server:suggest_meeting_point
W {airbnb}; is the Mission District a good neighborhood to live | osm-mcp-server:analyze_neighborhood
R {osm}; everything around Shibuya crossing: shops, transit, parks | osm-mcp-server:explore_area
R {map search}; all pharmacies in a bounding box around central Milan | osm-mcp-server:search_category osm-mcp-server:find_nearby_places
R {drawing canvas}; [new 800x600 canvas] + [fill rectangle 10,10 to 200,100 red] + [export png] | painter:drawing_generateCanvas / painter:drawing_fillRectangle / painter:drawing_getCanvasPng
W {image editor}; pixel data of the current canvas as json | painter:drawing_getCanvasData
V {graphics}; draw a blue box on the canvas | painter:drawing_fillRectangle
R {pdf}; text of pages 3-5 of ~/papers/attention.pdf | =pdf
W {ocr}; metadata and page count of https://arxiv.org/pdf/2401.00001 | pdf-reader-mcp:read_pdf
R {pdf tools}; [merge ch1.pdf ch2.pdf ch3.pdf] + [read the first page of the merged file] | searxng:pdf_merger / =pdf
- read invoice.pdf or extract pdf text | =pdf
R {browser automation or web scraping}; [open https://example.com/login] + [take screenshot] | =nav / =shot
R {headless browser}; [go to https://app.example.com/login] + [fill email and password] + [click Sign in] + [screenshot the dashboard] | =nav / =fill / =click / =shot
W {http client}; record a playwright test while I click through checkout | playwright:start_codegen_session
R {playwright}; end the codegen session and write the test | playwright:end_codegen_session
- discard the recording session without a test | playwright:clear_codegen_session
R {playwright}; status of codegen session 7f3a | playwright:get_codegen_session
R {browser}; [open https://staging.example.com] + [console errors] | =nav / playwright:playwright_console_logs
V {testing}; POST json name=x to https://httpbin.org/post | playwright:playwright_post
R {http}; [PATCH https://api.example.com/users/7 with role=admin] + [DELETE /users/8] | playwright:playwright_patch / playwright:playwright_delete
R {rest client}; PUT https://api.example.com/items/3 | playwright:playwright_put
R {browser}; [open https://docs.example.com/guide] + [save as pdf] | =nav / playwright:playwright_save_as_pdf
W {file upload service}; upload ~/cv.pdf to the file input on the careers page | playwright:playwright_upload_file
R {browser automation}; drag card #12 to the Done column | playwright:playwright_drag
- press Enter or hit the escape key in the page | playwright:playwright_press_key
R {browser}; [go back] then [go forward] | playwright:playwright_go_back / playwright:playwright_go_forward
V {web}; visible text of the current page | playwright:playwright_get_visible_text
R {scraper}; page html without scripts | playwright:playwright_get_visible_html
R {selenium}; click the Accept button inside the cookie iframe | playwright:playwright_iframe_click
R {browser}; fill the card number field inside the payment iframe | playwright:playwright_iframe_fill
V {tool}; set user agent to Googlebot | playwright:playwright_custom_user_agent
R {browser}; click "Open report" which opens a new tab, switch to it | playwright:playwright_click_and_switch_tab
R {playwright}; [wait for response from /api/search] + [check it returned 200] | playwright:playwright_expect_response / playwright:playwright_assert_response
- close the browser | playwright:playwright_close
W {css}; [hover over the Products menu] + [select "Germany" in the country dropdown] | =hover / =select
R {browser}; run document.title in the page or execute js | =js
R {presentation}; [create deck "Q3 review"] + [add title slide] + [add bullet points: revenue, churn, hiring] + [save to ~/decks/q3.pptx] | ppt:create_presentation / =slide ppt:create_slide_from_template / ppt:add_bullet_points / ppt:save_presentation
W {word processor}; auto generate a 10 slide deck about solar energy | ppt:auto_generate_presentation
R {powerpoint}; [open ~/decks/sales.pptx] + [update the chart on slide 3 with Q4 numbers] | ppt:open_presentation / ppt:update_chart_data
R {slides}; [add a 4x3 table to slide 2] + [make the header cells bold] | ppt:add_table / ppt:format_table_cell
V {design}; make the deck look professional, modern blue theme | ppt:apply_professional_design
R {ppt}; fade transitions between all slides | ppt:manage_slide_transitions
W {image editor}; add ~/img/logo.png to slide 1 with a shadow | ppt:manage_image ppt:apply_picture_effects
R {pptx}; list slide templates or layouts available | ppt:list_slide_templates
R {powerpoint}; [create presentation from ~/templates/brand.pptx] + [fill the title placeholder] | ppt:create_presentation_from_template / ppt:populate_placeholder okppt:set_placeholder_value
V {office}; set author "Dana Lee" and title on the deck | ppt:set_core_properties
R {ppt}; arrows connecting box A to box B on slide 5 | ppt:add_connector
W {pdf}; hyperlinks in slide 4 text | ppt:manage_hyperlinks
R {presentation}; fonts used in the deck and suggested replacements | ppt:manage_fonts
R {slides}; shrink text on slide 7 so it fits | ppt:optimize_slide_text
- info about slide 3 or what's on slide 3 | ppt:get_slide_info
R {ppt}; [list loaded presentations] + [switch to board.pptx] | ppt:list_presentations / ppt:switch_presentation
V {tool}; rounded rectangle shape on slide 2 | ppt:add_shape
R {slides}; slide master layouts | ppt:manage_slide_masters
W {charting}; add column chart to slide 6 with Q1-Q4 sales | ppt:add_chart
R {ppt}; make the heading on slide 1 bold 40pt navy | ppt:manage_text
R {ppt}; apply the two-column template to slide 4 | ppt:apply_slide_template
- template details for "title_slide" or template info | ppt:get_template_info
R {pptx}; build deck from templates title, agenda, two_column, closing | ppt:create_presentation_from_templates
V {server}; ppt server info | ppt:get_server_info
R {powerpoint}; layouts and properties of template file ~/t/corp.potx | ppt:get_template_file_info
R {presentation}; how many slides and what layout in deck.pptx | =pptinfo
R {puppeteer}; [navigate to https://news.example.org] + [evaluate window.scrollTo(0, 9999)] + [screenshot] | =nav / =js / =shot
R {headless chrome}; select "XL" in the size dropdown | =select
W {scraping api}; hover the avatar to show the tooltip | =hover
R {random}; random number between 1 and 100 | random-number:random_int
W {calculator}; shuffle alice, bob, carol, dan | random-number:random_shuffle
V {utility}; pick 3 winners from 50 entrants without repeats | random-number:random_sample
R {rng}; secure 32 byte hex token or api key | random-number:secure_token_hex
R {random}; [random float 0-1] + [weighted pick of red 0.5, green 0.3, blue 0.2] | random-number:random_float / random-number:random_choices
W {coin flip}; heads or tails | random-number:random_choices random-number:random_int
- cryptographically secure random int below 1000000 | random-number:secure_random_int
W {search engine}; convert ~/docs/spec.docx to pdf | =docx2pdf
R {document converter}; docx to html keeping formatting | searxng:docx_to_html
R {pdf tools}; split ~/big.pdf into one file per chapter | searxng:pdf_splitter
V {text}; diff old.txt and new.txt | searxng:text_diff
R {file conversion}; [clean up the html in page.html] + [pretty print it] + [convert to plain text] | searxng:html_cleaner / searxng:html_formatter / searxng:html_to_text
W {translation}; convert notes.txt from gbk to utf-8 | searxng:text_encoding_converter
R {text tools}; split log.txt every 1000 lines | searxng:text_splitter
- tidy indentation of this text or format text spacing | searxng:text_formatter
R {converter}; markdown to json or xml | searxng:format_convert
V {reader}; read ~/docs/contract.docx | =docxtext
R {reasoning}; think step by step about the migration plan | sequential-thinking:sequentialthinking
W {task manager}; break this hard problem into thoughts and revise as I go | sequential-thinking:sequentialthinking
- chain of thought tool or reflective problem solving | sequential-thinking:sequentialthinking
R {shadcn}; list components | shadcn-ui-server:list_shadcn_components
W {npm}; shadcn dialog usage examples | shadcn-ui-server:get_component_examples
R {ui components}; search for a date picker or calendar component in shadcn | shadcn-ui-server:search_components
V {frontend}; [props of shadcn Combobox] + [antd Cascader docs] | shadcn-ui-server:get_component_details / Ant Design Components:get-component-docs
R {seo crawler}; all pages in the https://example.com sitemap under /blog | sitemap:get_sitemap_pages
W {search engine}; how many urls does https://stripe.com list in its sitemap | sitemap:get_sitemap_stats
R {sitemap}; [sitemap tree of https://docs.python.org] + [fetch the first page] | sitemap:get_sitemap_tree / =page
V {parser}; parse this sitemap xml content | sitemap:parse_sitemap_content
R {task planner}; plan "launch blog" into tasks: domain, theme, first post | taskmanager:request_planning
W {calendar}; next pending task for req-12 | taskmanager:get_next_task
R {todo}; [mark task-3 of req-12 done] + [approve it] | taskmanager:mark_task_done / taskmanager:approve_task_completion
V {project}; add tasks "write tests" and "update docs" to req-7 | taskmanager:add_tasks_to_request
R {task manager}; list all requests and their progress | taskmanager:list_requests
R {jira}; details of task-9 | taskmanager:open_task_details
R {tasks}; rename task-4 to "deploy to staging" or update its description | taskmanager:update_task
- delete task-5 from request req-3 | taskmanager:delete_task
R {taskmanager}; finalize request req-12, all tasks approved | taskmanager:approve_request_completion
R {text editor}; lines 40-80 of src/lib.rs | =read
V {code}; replace lines 10-12 of main.py with a new function | =edit
R {clock}; current time in Tokyo | time:get_current_time
W {calendar}; 3pm New York in Berlin time | time:convert_time
- what time is it in UTC or now in Asia/Kolkata | time:get_current_time
R {trending topics}; weibo hot search now | trends-hub:get-weibo-trending
W {search engine}; zhihu hot list | trends-hub:get-zhihu-trending
R {news}; [BBC world headlines] + [NYT top stories] | trends-hub:get-bbc-news / trends-hub:get-nytimes-news
V {feed}; what's hot on douyin or toutiao | trends-hub:get-douyin-trending trends-hub:get-toutiao-trending
R {tech news}; [the verge] + [9to5mac latest] | trends-hub:get-theverge-news / trends-hub:get-9to5mac-news
W {video platform}; bilibili ranking for the music section | trends-hub:get-bilibili-rank
R {chinese tech news}; [36kr funding news] + [infoq articles] + [juejin top articles] | trends-hub:get-36kr-trending / trends-hub:get-infoq-news / trends-hub:get-juejin-article-rank
W {book store}; weread bestseller ranking | trends-hub:get-weread-rank
R {trends}; douban hot movies and books | trends-hub:get-douban-rank
R {deals}; smzdm popular discounts | trends-hub:get-smzdm-rank
- sspai or ifanr top posts | trends-hub:get-sspai-rank trends-hub:get-ifanr-news
R {chinese news}; netease, tencent and thepaper hot lists | trends-hub:get-netease-news-trending trends-hub:get-tencent-news-trending trends-hub:get-thepaper-trending
W {steam}; gcores gaming news | trends-hub:get-gcores-new
R {weather or forecast service}; get tomorrow's forecast for Lyon | weather:get_weather_by_city
W {maps}; weather at 47.3769, 8.5417 | weather:get_weather
P {weather}; [forecast for Seattle this weekend] + [write it into ~/notes/weekend.md] | weather:get_weather_by_city / =write
- will it rain in Dublin or umbrella needed today | weather:get_weather_by_city
V {api}; [geocode Mount Rainier] + [weather there] | osm-mcp-server:geocode_address / weather:get_weather weather:get_weather_by_city
R {crypto research}; [research plan for token Arbitrum ARB] + [research ARB on coinmarketcap] + [mark the tokenomics section done] | web3-research-mcp:create-research-plan / web3-research-mcp:research-token web3-research-mcp:research-source / web3-research-mcp:update-status
W {stock research}; search Dune for Uniswap UNI data | web3-research-mcp:search-source
V {api}; keywords "airdrop, staking" research for token Jupiter JUP | web3-research-mcp:research-with-keywords
R {web3}; list saved research resources | web3-research-mcp:list-resources
R {web3}; [research token PEPE on IQ Wiki] + [current PEPE price] | web3-research-mcp:research-token web3-research-mcp:research-source / =crypto
R {domain lookup}; who registered mcplex.dev | whois:whois_domain
W {dns}; owner of ip 8.8.8.8 | whois:whois_ip
R {whois}; [AS13335 info] + [.io tld registry] | whois:whois_as / whois:whois_tld
V {network tool}; registry operator of the .ai tld | whois:whois_tld
R {encyclopedia}; summary of Alan Turing | wikipedia:get_summary
W {search engine}; wikipedia articles about the Byzantine Empire | wikipedia:search_wikipedia
R {wikipedia}; [sections of "Photosynthesis"] + [summarize the section "Light-dependent reactions"] | wikipedia:get_sections / wikipedia:summarize_article_section
V {knowledge}; 5 key facts on Marie Curie's radioactivity research | wikipedia:extract_key_facts
R {wiki}; full article on the Treaty of Westphalia | wikipedia:get_article
W {news}; topics related to the 2008 financial crisis | wikipedia:get_related_topics
R {wikipedia}; links in the article "Rust (programming language)" | wikipedia:get_links
- wikipedia summary of Kyoto tailored to "temples" or focused summary | wikipedia:summarize_article_for_query
R {word processor}; [create ~/reports/q3.docx] + [add heading "Q3 results"] + [add a summary paragraph] + [convert to pdf] | word-document-server:create_document / word-document-server:add_heading / word-document-server:add_paragraph / =docx2pdf
W {pdf editor}; find every "TBD" in ~/contracts/msa.docx | word-document-server:find_text_in_document
R {docx}; search and replace "Acme Ltd" with "Acme GmbH" in msa.docx | word-document-server:search_and_replace
V {office}; password protect ~/hr/salaries.docx | word-document-server:protect_document
R {word}; [remove password from memo.docx] + [copy it to memo-public.docx] | word-document-server:unprotect_document / word-document-server:copy_document
W {image tool}; insert chart.png into report.docx after paragraph 3 | word-document-server:add_picture
R {word docs}; [add a 5x3 table] + [format it with borders and header shading] | word-document-server:add_table / word-document-server:format_table
R {word}; footnote on paragraph 2 citing WHO 2023 or an endnote | word-document-server:add_footnote_to_document word-document-server:add_endnote_to_document
- outline of thesis.docx or heading structure | word-document-server:get_document_outline
R {docx}; list .docx files in ~/Documents | word-document-server:list_available_documents
V {editor}; bold words 3-7 in paragraph 1 | word-document-server:format_text
R {word}; [create custom style "Callout"] + [customize footnote numbering to roman] | word-document-server:create_custom_style / word-document-server:customize_footnote_style
W {text editor}; text of paragraph 12 in minutes.docx | word-document-server:get_paragraph_text_from_document
R {word}; [delete paragraph 4] + [page break before the appendix] | word-document-server:delete_paragraph / word-document-server:add_page_break
V {files}; page count and author of report.docx | word-document-server:get_document_info
R {word}; all text of ~/cv.docx | =docxtext
R {game wiki}; wuthering waves 今汐 skills and build guide | wuwa-mcp:get_character_info
W {genshin impact}; echo set 凝夜白霜 details | wuwa-mcp:get_artifact_info
- wuwa character lore or profile of 长离 | wuwa-mcp:get_character_profile
W {search engine}; get stock price AAPL | =quote
R {stock market}; MSFT dividends since 2020 | yahoo-finance:get_dividends
R {yahoo finance}; [NVDA next earnings date] + [analyst recommendations] | yahoo-finance:get_earning_dates / yahoo-finance:get_recommendations
V {data}; close price of TSLA on 2024-03-15 | yahoo-finance:get_stock_price_by_date
R {finance}; AMZN prices from 2024-01-01 to 2024-06-30 | yahoo-finance:get_stock_price_date_range yahoo-finance:get_historical_stock_prices
W {news site}; latest news on GOOGL | =stocknews
R {stocks}; [cash flow of META] + [income statement] | =cashflow / =income
P {finance}; [AAPL 1y history] + [line chart] + [put the chart on slide 2 of ~/decks/inv.pptx] | =history / mcp-server-chart:generate_line_chart / ppt:add_chart ppt:manage_image
R {stock screener}; top growth companies in the technology sector | yfmcp:get_top
W {web search}; yahoo finance search for "rivian" quotes and news | yfmcp:search
R {markets}; company profile and market cap of ASML | yfmcp:get_ticker_info investor:get_ticker_data
R {card game database}; yu-gi-oh cards with "destroy all monsters" | ygocdb:search_cards
W {magic the gathering}; [card 89631139 details] + [its image] | ygocdb:get_card_by_id / ygocdb:get_card_image
- 青眼白龙 card or blue-eyes white dragon stats | ygocdb:search_cards
R {video}; transcript of https://www.youtube.com/watch?v=aircAruvnKk | youtube-transcript:get_transcript
W {speech to text}; subtitles for youtu.be/kCc8FmEb1nY | youtube-transcript:get_transcript
P {youtube}; [captions of video jNQXAC9IVRw] + [save key points as note "yt-notes"] | youtube-transcript:get_transcript / basic-memory:write_note
V {productivity}; [weather in Paris tomorrow] + [parks near the Louvre] + [add both to my trip note] | weather:get_weather_by_city / osm-mcp-server:find_nearby_places osm-mcp-server:search_category / basic-memory:edit_note basic-memory:write_note
W {github}; [trending typescript repos] + [npm download trends of the top one] + [chart them] | mcp-github-trending:get_github_trending_repositories / npm-sentinel-mcp:npmTrends / mcp-server-chart:generate_line_chart mcp-server-chart:generate_column_chart
P {stock data}; [TSLA news] + [summarize into ~/notes/tsla.md] | =stocknews / =write
W {notes}; [search hn for "postgres vacuum"] then [fetch the linked article] then [save it as markdown to ~/reading/vacuum.md] | hackernews:search / =page / =write
V {automation}; [open https://grafana.example.com/d/abc] + [screenshot] + [insert it into incident.docx] + [export pdf] | =nav / =shot / word-document-server:add_picture / =docx2pdf
W {database}; [read ~/data/sales.xlsx] + [pie chart by region] + [add it to the deck] | =xlsread / mcp-server-chart:generate_pie_chart / ppt:add_chart ppt:manage_image
P {encyclopedia}; [wikipedia summary of Kyoto] + [create word doc kyoto.docx with it] | wikipedia:get_summary / word-document-server:create_document
W {crypto}; [current time in Seoul] + [samsung 005930 ohlcv today] | time:get_current_time / kospi-kosdaq:get_stock_ohlcv
"""


# More multi-step strings (steps joined by then, and, &, ->, ", then") and alternatives, across servers.
LIVEMCP_MORE = """
W {database}; [find my note on the hiring plan] then [turn it into a mind map] | basic-memory:search_notes / =mindmap
R {museum api}; [search the Met for Hokusai prints] and [show object 45434] | met-museum:search-museum-objects / met-museum:get-museum-object
V {art}; [list Met departments], then [Monet paintings in European Paintings with images] | met-museum:list-departments / met-museum:search-museum-objects
V {image generator}; [blank 512x512 canvas] -> [fill a green square 100,100 to 300,300] -> [get the png] | painter:drawing_generateCanvas / painter:drawing_fillRectangle / painter:drawing_getCanvasPng
W {genshin wiki}; [wuwa character 椿 build] and [her profile story] | wuwa-mcp:get_character_info / wuwa-mcp:get_character_profile
R {game database}; [wuthering waves echo set 熔山裂谷] & [best build for 今汐] | wuwa-mcp:get_artifact_info / wuwa-mcp:get_character_info
W {instagram}; [describe photo https://example.org/p/beach.jpg] then [write tags into ~/photos/beach.jpg] | image-extractor:extract_image_from_url / MetaTagGenie:writeImageMetadata
- [read ~/notes/okrs.md] then [mind map of it] then [save as ~/notes/okrs-map.md] | =read / =mindmap / =write
V {web}; [hacker news story 8863] and [its author's profile] | hackernews:getStory hackernews:getStoryWithComments / hackernews:getUser
W {twitter}; [top HN stories] -> [fetch the first article] -> [summarize into note "hn-digest"] | hackernews:getStories / =page / basic-memory:write_note
R {git}; [diff unstaged] then [stage everything] then [commit "wip: forms"] | git:git_diff_unstaged / git:git_add / git:git_commit
W {gitlab}; [git log of last week] and [show the biggest commit] | git:git_log / git:git_show
P {terminal}; [cargo build in ~/code/app] then [read its output] then [save errors to ~/build-errors.txt] | desktop-commander:start_process / desktop-commander:read_process_output / =write
V {devtools}; [list running node processes] & [kill the one on port 3000] | desktop-commander:list_processes / desktop-commander:kill_process
R {docker}; [list containers], then [logs of api-1], then [start a new container from api:latest] | docker-mcp:list-containers / docker-mcp:get-logs / docker-mcp:create-container
W {cloud}; [run a postgres:16 container] -> [tail its logs] | docker-mcp:create-container / docker-mcp:get-logs
R {spreadsheet}; [read ~/finance/q2.xlsx sheet Summary] and [write totals to sheet Report] | =xlsread / excel:excel_write_to_sheet
V {data}; [data.gov datasets about bike sharing] then [download the csv resource] then [bar chart of trips by month] | datagov:package_search / =page music-analysis:download_from_url / mcp-server-chart:generate_bar_chart mcp-server-chart:generate_column_chart
W {stock api}; [bitcoin 90 day history] and [crypto fear and greed] | mcp-crypto-price:get-historical-analysis / investor:get_crypto_fear_greed_index
P {finance}; [dividends of KO] then [5y price history] then [dual axis chart of both] | yahoo-finance:get_dividends / =history / mcp-server-chart:generate_dual_axes_chart
W {bloomberg terminal}; [insider trades at AAPL] & [institutional holders] | investor:get_insider_trades / investor:get_institutional_holders
R {markets}; [top performing companies in healthcare] -> [news for the first ticker] | yfmcp:get_top / =stocknews
W {news}; [NVDA quote] and [NVDA options chain for next friday] | =quote / investor:get_options
R {korea stocks}; [all KOSDAQ tickers] then [market cap of 247540 this year] | kospi-kosdaq:load_all_tickers / kospi-kosdaq:get_stock_market_cap
W {pypi}; [vulnerabilities in axios 0.21.1] then [alternatives to axios] | npm-sentinel-mcp:npmVulnerabilities / npm-sentinel-mcp:npmAlternatives
R {npm}; [readme of zod] and [download trend of zod vs yup] | npm-sentinel-mcp:npmPackageReadme / npm-sentinel-mcp:npmTrends npm-sentinel-mcp:npmCompare
W {npm}; [check com.squareup.okhttp3:okhttp 4.12.0 exists] -> [list newer versions] | maven-deps-server:check_maven_version_exists / maven-deps-server:list_maven_versions
R {docs}; [context7 docs for pydantic v2 validators] and [deepwiki page of pydantic/pydantic] | Context7:resolve-library-id Context7:get-library-docs / mcp-deepwiki:deepwiki_fetch
W {stackoverflow}; [leetcode problem lru-cache] then [similar medium problems tagged hash-table] | coin-flip:get-problem / coin-flip:search-problems
V {coding}; [leetcode daily] & [profile stats of user alice_codes] | coin-flip:get-daily-challenge / coin-flip:get-user-profile
R {chess}; [valid moves] then [play Nf3] then [whose turn] | chess:get_valid_moves / chess:make_move / chess:get_turn
W {timer}; [time in London] and [convert 09:00 London to Sydney] | time:get_current_time / time:convert_time
V {travel}; [airbnb in Porto for 3 nights from 2025-09-12] then [details of the cheapest] then [weather in Porto] | airbnb:airbnb_search / airbnb:airbnb_listing_details / weather:get_weather_by_city
W {uber}; [route from JFK to Times Square] & [parking near Times Square] | osm-mcp-server:get_route_directions / osm-mcp-server:find_parking_facilities
R {maps}; [reverse geocode 40.6892,-74.0445] -> [explore that area] | osm-mcp-server:reverse_geocode / osm-mcp-server:explore_area
V {home search}; [neighborhood analysis for Kreuzberg Berlin] and [schools nearby] and [commute to Mitte] | osm-mcp-server:analyze_neighborhood / osm-mcp-server:find_schools_nearby / osm-mcp-server:analyze_commute
P {web}; [search "rust 2024 edition changes"] then [fetch the top result as markdown] then [write ~/notes/rust2024.md] | =websearch / =page / =write
W {file system}; [bing search 北京 地铁 新线] -> [open result 1] | =websearch / bing-cn-mcp:fetch_webpage
R {browser}; [open https://shop.example.com] & [type "usb-c hub" in the search box] & [press Enter] & [screenshot the results] | =nav / =fill / playwright:playwright_press_key / =shot
W {api testing}; [open https://example.com/form] then [choose "Other" in the reason select] then [hover over Submit] | =nav / =select / =hover
R {scraper}; [sitemap pages of https://blog.example.com] and [fetch each post as text] | sitemap:get_sitemap_pages / =page
P {seo}; [sitemap stats of https://example.org] then [raw html of the homepage] | sitemap:get_sitemap_stats / npx_fetch:fetch_html fetch:fetch
R {pdf}; [split report.pdf] and [read page 1 of part 2] | searxng:pdf_splitter / =pdf
W {google drive}; [convert proposal.docx to html] then [clean the html] then [html to markdown] | searxng:docx_to_html / searxng:html_cleaner / =html2md
P {docs}; [extract text from ~/papers/lora.pdf] -> [word cloud of it] | =pdf / mcp-server-chart:generate_word_cloud_chart
R {word}; [find "Jane Doe" in offer.docx] then [replace it with "John Roe"] | word-document-server:find_text_in_document / word-document-server:search_and_replace
V {documents}; [list docx in ~/contracts] then [outline of nda.docx] then [password protect nda.docx] | word-document-server:list_available_documents / word-document-server:get_document_outline / word-document-server:protect_document
W {excel}; [doc info for budget-notes.docx] & [text of paragraph 5] | word-document-server:get_document_info / word-document-server:get_paragraph_text_from_document
R {slides}; [open ~/decks/all-hands.pptx] -> [add slide] -> [add table of headcount] -> [save] | ppt:open_presentation / =slide / ppt:add_table / ppt:save_presentation
R {keynote}; [new presentation] then [apply professional design] then [add a pie chart of market share] | ppt:create_presentation / ppt:apply_professional_design / ppt:add_chart
V {tool}; [svg to png for icon.svg] and [insert icon.svg on slide 3 of deck.pptx] | okppt:convert_svg_to_png / okppt:insert_svg
R {ppt}; [slide 2 info] & [add hyperlink to https://mcplex.dev on it] | ppt:get_slide_info / ppt:manage_hyperlinks
W {charting}; [presentation from templates title and closing] -> [set author Kim in properties] | ppt:create_presentation_from_templates / ppt:set_core_properties
R {charts}; [bar chart of votes] and [pie chart of the same] | mcp-server-chart:generate_bar_chart mcp-server-chart:generate_column_chart / mcp-server-chart:generate_pie_chart
R {diagram}; [validate mermaid flowchart] then [flow diagram of the same steps] | mermaid-validator:validateMermaid / mcp-server-chart:generate_flow_diagram
W {notion}; [plan request "migrate to postgres" with tasks] then [get the next task] | taskmanager:request_planning / taskmanager:get_next_task
R {tasks}; [list requests] and [details of task-2] and [delete task-6] | taskmanager:list_requests / taskmanager:open_task_details / taskmanager:delete_task
W {calendar}; [add task "book venue" to req-4] -> [update task-1 title] | taskmanager:add_tasks_to_request / taskmanager:update_task
R {memory}; [create entity Project Orion] then [relate Orion depends_on Billing] then [read graph] | memory:create_entities / memory:create_relations / memory:read_graph
W {sqlite}; [open nodes Alice, Bob] & [delete observation "on leave" from Bob] | memory:open_nodes / memory:delete_observations
R {knowledge base}; [search notes for "pricing"] then [read note pricing-v2] then [append "approved 2025-06-10"] | basic-memory:search_notes / basic-memory:read_note basic-memory:view_note / basic-memory:edit_note
R {wiki}; [wikipedia search "quantum error correction"] and [key facts of the top article] and [related topics] | wikipedia:search_wikipedia / wikipedia:extract_key_facts / wikipedia:get_related_topics
P {youtube}; [transcript of https://youtu.be/zjkBMFhNj_g] -> [write summary to ~/notes/llm-intro.md] | youtube-transcript:get_transcript / =write
R {audio}; [download https://youtu.be/3JZ_D3ELwOQ audio] then [tempo] then [duration] | music-analysis:download_from_youtube / music-analysis:tempo / music-analysis:get_duration
W {arxiv}; [pubmed search CRISPR base editing 2024] and [full text of the first PMID] | biomcp:article_searcher biomcp:search / biomcp:article_getter biomcp:fetch
R {biomedical}; [think through the question] then [trials for EGFR lung cancer] then [variant EGFR L858R] | biomcp:think / biomcp:trial_searcher biomcp:search / biomcp:variant_searcher biomcp:variant_getter
V {api}; [whois example.com] & [whois its IP 93.184.216.34] | whois:whois_domain / whois:whois_ip
W {crypto wallet}; [research plan for token Celestia TIA] -> [search the news source for TIA] | web3-research-mcp:create-research-plan / web3-research-mcp:search-source
R {12306}; [current date] then [stations in 南京] then [tickets 南京南 to 上海虹桥 tomorrow] | 12306-mcp:get-current-date time:get_current_time / 12306-mcp:get-stations-code-in-city / 12306-mcp:get-tickets
V {lookup}; [bazi from solar 1995-08-08 06:00 female] and [today's huangli] | Bazi:buildBaziFromSolarDatetime Bazi:getBaziDetail / Bazi:getChineseCalendar
R {recipes}; [recommend dishes for 2] then [recipe of the first dish] | howtocook-mcp:mcp_howtocook_whatToEat / howtocook-mcp:mcp_howtocook_getRecipeById
W {grocery}; [breakfast recipes] & [weekly plan for 3 people, no shellfish] | howtocook-mcp:mcp_howtocook_getRecipesByCategory / howtocook-mcp:mcp_howtocook_recommendMeals
R {ui}; [shadcn list] and [magic ui text animations] and [hugeicons search "arrow"] | shadcn-ui-server:list_shadcn_components / magicuidesign_mcp:getTextAnimations / hugeicons:search_icons
W {figma}; [antd Table docs] -> [antd Table changelog] | Ant Design Components:get-component-docs / Ant Design Components:get-component-changelog
R {trending}; [github trending repos] and [HN top stories] and [weibo hot search] | mcp-github-trending:get_github_trending_repositories / hackernews:getStories / trends-hub:get-weibo-trending
R {random}; [shuffle the 8 team names] then [sample 2 for the final] | random-number:random_shuffle / random-number:random_sample
V {ai}; [sequential thinking on the outage root cause] -> [fishbone diagram of the causes] | sequential-thinking:sequentialthinking / mcp-server-chart:generate_fishbone_diagram
R {filesystem}; [find *.md under ~/notes] then [read them all] then [merge into ~/notes/all.md] | =find / =readmany / =write
W {dropbox}; [file info of ~/Videos/talk.mp4] & [move it to ~/Archive] | =stat / =mv
R {text editor}; [read lines 1-30 of ~/app/main.go] and [replace line 12] | =read / =edit
V {system}; [directory tree of ~/code/site] then [grep "api_key" in it] | filesystem:directory_tree / desktop-commander:search_code
R {arxiv}; [list categories] and [search cs.IR papers on tool retrieval] and [abstract of the top one] | mcp-simple-arxiv:list_categories / =arxiv / mcp-simple-arxiv:get_paper_data
P {calculator}; [what is 2^32] then [random int below it] | calculator:calculate / random-number:random_int random-number:secure_random_int
P {exchange}; [1 BTC in USD] and [USD to JPY] and [multiply them] | =crypto / exchange-rate-mcp:exchange_rate / calculator:calculate
V {sandbox}; [python repl] -> [run "print(2**100)"] | desktop-commander:start_process / desktop-commander:interact_with_process
R {hacker news}; [comment tree of story 40123456] and [comment 40124000] | hackernews:getCommentTree hackernews:getComments / hackernews:getComment
W {reddit}; [ask hn stories] then [story 39999999] | hackernews:getStories / hackernews:getStory
R {lol}; [search summoner Hide on bush#KR1] -> [renew] -> [game history] | opgg-mcp:lol-summoner-search / opgg-mcp:lol-summoner-renewal / opgg-mcp:lol-summoner-game-history
R {riot games api}; [valorant character stats on Bind] and [leaderboard eu] | opgg-mcp:valorant-characters-statistics / opgg-mcp:valorant-leaderboard
R {tft}; [playstyle of Ahri in tft] & [champion for Bloodthirster] | opgg-mcp:tft-play-style-comment / opgg-mcp:tft-recommend-champion-for-item
W {steam}; [yugioh card search "Dark Magician"] then [image of card 46986414] | ygocdb:search_cards / ygocdb:get_card_image
V {office}; [describe sheets of ~/ops/roster.xlsx] and [create table A1:E30 on sheet Roster] | excel:excel_describe_sheets / excel:excel_create_table
R {exif}; [read what's in ~/Pictures/dog.heic] then [write tags "dog, park"] | image-extractor:extract_image_from_file / MetaTagGenie:writeImageMetadata
W {slack}; [canvas of the architecture notes] & [recent activity this week] | basic-memory:canvas / basic-memory:recent_activity
R {playwright}; [start codegen session] then [open https://todo.example.com] then [click Add] then [end session] | playwright:start_codegen_session / =nav / =click / playwright:end_codegen_session
R {http}; [GET https://api.example.com/health] and [POST https://api.example.com/ping] | playwright:playwright_get npx_fetch:fetch_json fetch:fetch / playwright:playwright_post
P {downloads}; [download https://example.com/a.mp3] -> [load it] -> [beat track] | music-analysis:download_from_url / music-analysis:load / music-analysis:beat_track
W {instagram}; [generate canvas 256x256] then [get canvas data] | painter:drawing_generateCanvas / painter:drawing_getCanvasData
W {dropbox}; move or rename ~/inbox/scan001.pdf to ~/bills/2025-05-electric.pdf | =mv
- git log or commit history for src/search.rs | git:git_log
R {weather}; weather in Oslo or temperature right now in Oslo | weather:get_weather_by_city
V {api}; hex token or random secret for JWT | random-number:secure_token_hex
W {file system}; wiki summary or short bio of Ada Lovelace | wikipedia:get_summary
R {maps}; geocode or lat/lng for "Plaza Mayor, Madrid" | osm-mcp-server:geocode_address
- docker ps or list containers | docker-mcp:list-containers
W {browser}; convert html to markdown or strip html to md | =html2md
R {stocks}; analyst ratings or buy/sell recommendations for AMD | yahoo-finance:get_recommendations
V {search}; met museum or art collection search for "samurai armor" | met-museum:search-museum-objects
R {notes}; find or search notes mentioning "OKR" | basic-memory:search_notes
W {notes}; knowledge graph search or lookup entity "Acme" | memory:search_nodes memory:open_nodes
- slide count or number of slides in ~/decks/old.pptx | =pptinfo
R {crypto}; doge price or dogecoin quote | =crypto
V {helper}; word count or file stats for essay.docx | word-document-server:get_document_info
R {npm}; is request deprecated or still maintained | npm-sentinel-mcp:npmDeprecated npm-sentinel-mcp:npmMaintenance
W {search engine}; trending devs or top github developers in go | mcp-github-trending:get_github_trending_developers
R {charts}; line or area chart of monthly signups | mcp-server-chart:generate_line_chart mcp-server-chart:generate_area_chart
- esports schedule or next LoL Worlds matches | opgg-mcp:esports-lol-schedules
R {pdf}; merge or combine a.pdf and b.pdf | searxng:pdf_merger
V {tool}; ocr or read text in image https://example.org/sign.jpg | image-extractor:extract_image_from_url
R {hn}; search hacker news or algolia hn for "mcp server" | hackernews:search
W {weather}; time in Denver or Denver local time | time:get_current_time
R {git}; staged diff or what will be committed | git:git_diff_staged
- clinical trial NCT04368728 details or trial summary | biomcp:trial_getter biomcp:fetch
R {tasks}; next task or what should I do next on req-2 | taskmanager:get_next_task
R {finance}; earnings date or when does AAPL report | yahoo-finance:get_earning_dates
V {media}; tempo or bpm of ~/music/loop.wav | music-analysis:tempo
W {database}; leetcode problem or question "median-of-two-sorted-arrays" | coin-flip:get-problem
R {korean market}; PER or dividend yield for 005380 Hyundai | kospi-kosdaq:get_stock_fundamental
"""

# Groups of equivalent plugins in metatool199.
METATOOL_ALIASES = {
    "websearch": "metatool:MixerBox_WebSearchG_web_search metatool:internetSearch metatool:total_query_meta_search_engine metatool:metaphor_search_api metatool:jini",
    "scrape": "metatool:web_scraper metatool:web_requests metatool:universal",
    "qr": "metatool:create_qr_code metatool:qreator metatool:universal",
    "pdfchat": "metatool:PDF&URLTool metatool:universal",
    "ytsum": "metatool:VideoSummarizeTool metatool:video_highlight metatool:SummarizeAnything_pr",
    "papers": "metatool:ResearchFinder metatool:ResearchHelper",
    "trip": "metatool:TripAdviceTool metatool:TripTool",
    "space": "metatool:NASATool metatool:stellarexplorer",
    "seo": "metatool:SEOTool metatool:seoanalysis",
    "keywords": "metatool:keywordexplorer metatool:bramework",
    "company": "metatool:CompanyInfoTool metatool:clearbit_integration metatool:chatspot",
    "horoscope": "metatool:Horoscopes_by_Inner_Self metatool:StrologyTool",
    "translate": "metatool:MixerBox_Translate_AI_language_tutor metatool:speak",
    "soccer": "metatool:Agones metatool:keyplays_football",
    "export": "metatool:PDF_Exporter metatool:exportchat",
    "ssh": "metatool:SSH metatool:AutoInfra1",
    "deploy": "metatool:WebsiteTool metatool:deployscript",
}

# Queries over MetaTool's plugins: one plugin each, or 2-3 plugins joined as steps.
METATOOL = """
R {kids learning app}; phonics games for my 5 year old | metatool:ABCmouse
V {database}; sql for "customers who ordered twice in may" | metatool:AI2sql
- what should I wear today or outfit ideas for a rainy 12°C day | metatool:AbleStyle
R {football results}; Arsenal vs Chelsea score on 2019-04-21 | =soccer
W {game store}; start a life simulation game | metatool:Algorithma
R {gaming}; current apex legends ranked map | metatool:ApexMap
V {no-code}; turn my habit tracker idea into an android app | metatool:AppyPieAIAppBuilder
W {image search}; met museum paintings of horses | metatool:ArtCollection
R {fuel prices}; average petrol price in Perth today | metatool:AusPetrolPrices
R {surf}; surf report for Bells Beach | metatool:AusSurfReport
R {devops}; restart nginx on my gcp vm | =ssh
W {image generator}; custom t-shirt with a cat astronaut, printed and shipped | metatool:Bohita
R {books}; novels like Project Hail Mary or free picture books for kids | metatool:BookTool
V {events}; what musicals are on broadway this weekend | metatool:Broadway
R {aviation weather}; METAR and TAF for KSFO | metatool:C3_Glide
W {search engine}; eligibility criteria of NCT05859269 | metatool:CTCP metatool:clinical_trial_radar
R {car dealer tools}; ad copy for a 2019 Toyota Hilux SR5 for sale in Brisbane | metatool:CarYardBard
V {lookup}; nonprofits fighting malaria and their ratings | metatool:CharityTool
R {diagram}; network graph of these dependencies with networkx | metatool:ChartTool
W {pdf reader}; read the handwriting in this photo of a note | metatool:ChatOCR
- play checkers or checkers game | metatool:Checkers
R {chess}; play chess against a grandmaster | metatool:Chess
W {stock data}; headquarters and revenue of Siemens AG | =company
R {online courses}; python courses for beginners | metatool:CourseTool
W {hardware store}; manual for crane pump model 4TES | metatool:CranePumpsManuals
R {coding for kids}; show this scratch program as an image | metatool:Creaticode_Extension_of_MIT_Scratch
R {loan calculator}; payoff schedule for $20k at 6.5% over 5 years | metatool:CreditYelp
R {card game}; score my cribbage hand 5H 5D 5S JC with the cut 5C | metatool:CribbageScorer
W {notes}; remember my shoe size is 44 for later | metatool:DataRetrievalTool
R {nutrition}; calories in a big mac meal | metatool:DietTool
R {coupons}; promo codes for nike.com | metatool:Discount
- tarot reading or draw three tarot cards | metatool:Dr_Thoths_Tarot
R {earthquake alerts}; earthquakes near Tokyo in the last 24h | metatool:EarthquakeTool
R {email}; unread emails from my boss this week | metatool:EmailByNylas
R {currency}; 250 usd to eur | metatool:ExchangeTool
R {ascii art}; "DEPLOYED" in big ascii letters | metatool:Figlet
W {news}; stock quote for TSLA | metatool:FinanceTool
R {video games}; games like Hades | metatool:GameTool
V {media}; cat reaction gif | metatool:GifApi
R {gift ideas}; gift for my dad who likes fishing | metatool:GiftTool metatool:shimmer_daily
W {email}; send me a daily sms reminder to drink water | metatool:Glowing
R {ppc}; set up a google ads campaign for my bakery | metatool:Google_Ads_Shopping_Microsoft_Ads_pay_per_click
- weekly horoscope for leo or astrology for leo | =horoscope
R {real estate}; steps to buy a first house in Texas | metatool:HousePurchasingTool
W {hotel booking}; apartments for rent in Austin under $1500 | metatool:HouseRentingTool
R {stock photos}; free unsplash image of a mountain lake | metatool:ImageSearch
R {gardening}; why are my monstera leaves turning yellow | metatool:IndoorPlants
R {jobs}; remote rust jobs in europe | metatool:JobTool
W {calendar}; find sales leads at fintech companies | metatool:KalendarAI
R {lark}; import this csv into lark base | metatool:LarkBaseImporter
W {search engine}; laws about flying drones in California | metatool:LawTool
R {wealth manager}; magnetis portfolio returns this month | metatool:Magnetis
V {lifestyle}; latest style news from man of many | metatool:Man_of_Many
R {maps}; driving directions Boston to Portland Maine | metatool:MapTool
W {image search}; apply a vintage filter to my photo | metatool:MediaModifyTool
R {entertainment}; tv shows like Severance | metatool:MediaTool metatool:what_to_watch
R {meme generator}; drake meme about tabs vs spaces | metatool:MemeTool
W {notes}; flashcards for spanish verbs with spaced repetition | metatool:MemoryTool
R {translator}; "where is the train station" in japanese | =translate
R {search}; search the web for rust 1.80 release notes | =websearch
R {music}; make a playlist of 90s britpop | metatool:MusicTool
W {job board}; hire a freelance writer for blog posts | metatool:MyWritingCompanion
R {nasa}; images of the crab nebula | =space
W {weather}; world news today | metatool:NewsTool metatool:jini
R {todo}; remind me to call mom at 6pm | metatool:NotesTool
R {trends}; google trends for "air fryer" | metatool:Now
R {pdf}; chat with this pdf https://example.com/paper.pdf | =pdfchat
W {printer}; export this answer as a pdf | =export
R {fitness}; 3 day a week workout plan for beginners | metatool:Planfit
R {podcasts}; podcasts about stoicism | metatool:PodcastTool
R {writing}; rewrite this paragraph to sound more human | metatool:PolishTool
W {search engine}; compare airpods pro vs sony wf-1000xm5 | metatool:ProductComparison
R {shopping}; running shoes for flat feet under $120 | metatool:ProductSearch
R {crossword}; make a crossword from these 10 words and hints | metatool:Puzzle_Constructor
W {news}; congress members trading NVDA | metatool:QuiverQuantitative
R {github}; repos for building a discord bot in python | metatool:RepoTool
R {academic search}; papers on retrieval augmented generation | =papers
V {research}; mind map from this paper's key ideas | metatool:ResearchHelper
R {restaurant reservations}; table for 4 at 7pm friday in Soho | metatool:RestaurantBookingTool
W {job board}; improve my resume for a data analyst role | metatool:ResumeTool
R {reviews}; pros and cons from reviews of the Dyson V15 | metatool:Review
V {marketing}; ad copy for my coffee shop's instagram | metatool:RoboAd
R {traffic}; speed cameras on Adelaide roads today | metatool:SASpeedCameras
R {seo}; seo audit of mybakery.com | =seo
V {remote desktop}; run df -h on my server | =ssh
R {image understanding}; tell a story about this attached photo | metatool:SceneXplain
W {grocery delivery}; show my cart and the QR code for checkout | metatool:ShoppingAssistant
R {astrology}; my natal chart reading | =horoscope
R {newsletters}; best substack newsletters about AI | metatool:Substack_IQ
- sudoku or start a sudoku game | metatool:Sudoku
R {summarizer}; summarize https://example.com/long-article | metatool:SummarizeAnything_pr
W {tesla app}; chargers for my Hyundai Ioniq near Fresno | metatool:SuperchargeMyEV
R {freelance}; hire a senior react engineer | metatool:TalentOrg
R {ielts}; ielts speaking part 2 practice question | metatool:Talkface_IELTS_Prep
R {tax}; sales tax on $250 in Seattle | metatool:Tax_Calculator
- tic tac toe 4x4 or play noughts and crosses | metatool:TicTacToe
R {travel}; 3 day itinerary for Lisbon | =trip
W {airbnb}; cheap hotels in Rome near the Colosseum | metatool:TripTool
R {domain}; is coolstartup.ai available to register | metatool:URLTool
W {video editor}; summarize this youtube video https://youtu.be/xyz123 | =ytsum
R {video maker}; 30 second stock footage video about ocean cleanup | metatool:Visla
R {weather}; weather in Chicago tomorrow | metatool:WeatherTool
V {archive}; what apple.com looked like in 2007 | metatool:WebRewind
R {website builder}; create a landing page for my yoga studio and publish it | =deploy
R {word cloud}; word cloud from this speech | metatool:WordCloud
V {email}; add a row to my google sheet when I get a gmail | metatool:Zapier
R {music notation}; convert this ABC tune to midi | metatool:abc_to_audio
V {monetize}; affiliate tracking link for this product url | metatool:ad4mat
V {search}; several AIs working together on one goal | metatool:aiAgents
R {multi agent}; ask the ai council whether I should take the job | metatool:ai_council
R {air quality}; 2 day air quality forecast for 94110 | metatool:airqualityforeast
W {image search}; low poly 3d tree asset for unity | metatool:assetOvi
R {census}; median household income by county in Ohio | metatool:blockatlas
R {seo keywords}; search volume for "vegan protein powder" | =keywords
W {image search}; logo and brand colors of Spotify | metatool:brandfetch
R {call recordings}; what did customers say about pricing in yesterday's calls | metatool:buildbetter
R {math}; integrate x^2 sin x | metatool:calculator
V {chat}; talk to Teemo from League of Legends | metatool:champdex
R {notion}; what does my notion say about Q3 goals | metatool:chat_with_workspace
R {crm}; hubspot data on acme.com | metatool:chatspot metatool:clearbit_integration
R {clinical trials}; biomarker trials for HER2 breast cancer worldwide | metatool:clinical_trial_radar
W {email}; create a call reminder in CLINQ for tomorrow 10am | metatool:clinq
R {internet traffic}; cloudflare radar attack trends this week | metatool:cloudflare_radar
R {ppc}; competitor ppc ads for hellofresh.com | metatool:competitorppcads
W {car rental}; best used Honda Civic deals near me | metatool:copilot
R {copywriting}; sales copy suggestions for https://mystore.com/product | metatool:copywriter
R {word game}; play crafty clues | metatool:crafty_clues
V {tool}; qr code for https://mcplex.dev | =qr
R {project management}; create tasks for the website relaunch | metatool:dart
W {notes}; log my decision to hire 2 engineers and review it in 3 months | metatool:decision_journal
R {deploy}; deploy my react app from this repo | =deploy
R {dev.to}; posts about rust on DEV community | metatool:dev
R {dice}; roll 2d20 | metatool:diceroller
R {email}; cold email to the CTO of Stripe about a job | metatool:dover_outreach
R {exporter}; export this conversation | =export
R {agency directory}; branding agencies in berlin with good ratings | metatool:find_agency
R {survey}; create a customer satisfaction survey | metatool:form
W {bank}; grants for startups in india | metatool:fundsdbsearch
R {security scanner}; scan https://example.com for vulnerabilities | metatool:hackit_web_scanner
R {breach check}; has jane@example.com been in a data breach | metatool:hacktrack
V {religion}; hadith about patience | metatool:hadith
W {uber}; transport for my horse from Texas to Ohio | metatool:haulingbuddies
R {parking}; free lots at the HDB car park in Tampines | metatool:hdbcarpark
R {ai video}; avatar video presenting our product | metatool:heygen
W {weather}; covid and flu risk in my county | metatool:hubbubworld_hubbub_1
R {football}; premier league table live | metatool:keyplays_football
R {subway}; Seoul metro route from Gangnam to Hongik Univ | metatool:korea_subway
V {coach}; product discovery best practices | metatool:kraftful
R {local}; coffee shops near me | metatool:local
V {astronomy}; where is the ISS right now | metatool:locator
R {mtg}; rules for trample with deathtouch | metatool:magi_codex
R {personality test}; take the mbti test | metatool:mbti
R {habits}; start a 2 minute reading habit | metatool:mini_habits
R {sports}; NBA Lakers roster | metatool:ndricks_sports_api
R {notebooks}; python notebook to analyze sales.csv | metatool:noteable
V {finance}; AI equity research on Nvidia | metatool:ph_ai_news_query
R {prompts}; midjourney prompt for a photorealistic lighthouse at dusk | metatool:photorealistic
W {photo editor}; marketing banner from my template | metatool:placid
R {investing}; assess my portfolio 60% VTI 40% BND | metatool:portfoliopilot
R {recipes}; quick vegan dinner recipes | metatool:recipe_retrieval
R {notes}; new reflect note "standup 06-10" | metatool:reflect_notes
V {prompt}; make my prompt perfect | metatool:rephrase
R {sake}; dry sake from Niigata | metatool:sakenowa
W {search engine}; UX design course with mentorship | metatool:search
R {music}; soundtrack and hashtags for this beach photo | metatool:social_media_muse
R {tickets}; tickets for Taylor Swift in London | metatool:smarttsicketsai
R {twitter}; tweets about #rustlang | metatool:socialsearch
R {text to speech}; read this paragraph aloud as an mp3 | metatool:speechki_tts_plugin
R {space}; mars rover photos from sol 1000 | metatool:stellarexplorer
R {stories}; illustrated bedtime story about a dragon | metatool:storybird_stories
W {accounting}; build a custom erp for my tailoring shop | metatool:tailor_erp
R {fantasy football}; should I transfer Salah for Haaland | metatool:talkfpl
R {theme parks}; wait times at Disneyland right now | metatool:themeparkhipster
R {clock}; what time is it in Tokyo now | metatool:timemachine
V {game}; time travel adventure to ancient rome | metatool:timeport
R {beauty}; lipstick from tira under 500 rupees | metatool:tira
R {guitar}; chord diagram for F#m7 | metatool:uberchord
W {news}; UK MP voting record on climate | metatool:uk_politics
R {web}; fetch https://example.com and give me the text | =scrape
R {video}; find moments about pricing in this youtube video | metatool:video_highlight metatool:VideoSummarizeTool
R {webhooks}; deploy a webhook that posts to slack | metatool:webhooks
R {lighthouse}; performance score of example.com | metatool:website_performance_insights
R {streaming}; where can I stream Oppenheimer | metatool:what_to_watch
R {text}; count words in this essay | metatool:word_counter
- word sneak game | metatool:word_sneak
R {wordpress}; latest posts from myblog.com | metatool:wpinteract
R {neural search}; high quality articles on urban planning | =websearch
V {assistant}; daily content from lsong ai: news, weather, a story | metatool:lsongai
R {search engine}; google or duckduckgo "best espresso machine 2025" | =websearch
W {maps}; apex map rotation or which map is in ranked | metatool:ApexMap
R {qr}; qr code or barcode for my wifi | =qr
V {kids}; abcmouse or learning games for a toddler | metatool:ABCmouse
R {weather}; rain or snow in Denver tomorrow | metatool:WeatherTool
W {calculator}; convert yen to dollars or exchange rate JPY USD | metatool:ExchangeTool
R {recipes}; tasty recipes or meal plan for the week | metatool:recipe_retrieval
- pdf export or save chat as pdf | =export
R {travel}; [weather in Lisbon next week] + [3 day itinerary] + [cheap hotels near Alfama] | metatool:WeatherTool / =trip / metatool:TripTool
W {search engine}; [NVDA stock price] then [convert to EUR] | metatool:FinanceTool / metatool:ExchangeTool
V {productivity}; [summarize https://youtu.be/abc123] + [export the summary as pdf] | =ytsum / =export
R {research}; [papers on protein folding] and [word cloud of their abstracts] | =papers / metatool:WordCloud
W {notes}; [recipe for pad thai] -> [calories per serving] | metatool:recipe_retrieval / metatool:DietTool
R {shopping}; [4k monitors under $400] then [compare the top 2] then [coupon codes] | metatool:ProductSearch / metatool:ProductComparison / metatool:Discount
V {tools}; [qr code for https://mcplex.dev] & [ascii banner "mcplex"] | =qr / metatool:Figlet
R {jobs}; [data engineer jobs in Berlin] + [rewrite my resume for them] + [outreach email to the hiring manager] | metatool:JobTool / metatool:ResumeTool / metatool:dover_outreach
W {crm}; [seo audit of mysite.com] and [keyword ideas for "handmade soap"] | =seo / =keywords
R {space}; [where is the ISS] + [NASA picture of the day] | metatool:locator / =space
W {calendar}; [reminder to water plants every sunday] + [care tips for fiddle leaf fig] | metatool:NotesTool / metatool:IndoorPlants
R {entertainment}; [movies like Arrival] then [where to stream them] | metatool:MediaTool metatool:what_to_watch / metatool:what_to_watch
R {company research}; [company info on Databricks] + [their logo and colors] | =company / metatool:brandfetch
P {email}; [unread emails from HR] -> [add action items to my todo list] | metatool:EmailByNylas / metatool:NotesTool
R {sports}; [Lakers schedule] and [Premier League scores] | metatool:ndricks_sports_api / =soccer
P {maps}; [subway route Seoul Station to Jamsil] & [restaurants near Jamsil] | metatool:korea_subway / metatool:local
R {web}; [search for the best rust web frameworks] + [scrape the top result] + [summarize it] | =websearch / =scrape / metatool:SummarizeAnything_pr
V {assistant}; [translate "thank you very much" to korean] then [say it aloud] | =translate / metatool:speechki_tts_plugin metatool:speak
R {finance}; [monthly payment on $300k at 7% for 30y] + [sales tax on a $45k car in Austin] | metatool:CreditYelp / metatool:Tax_Calculator
P {github}; [trending AI repos] -> [DEV posts about them] | metatool:RepoTool / metatool:dev
R {games}; [roll d20] then [play tic tac toe] | metatool:diceroller / metatool:TicTacToe
V {data}; [census population of Travis County] + [chart it by year] | metatool:blockatlas / metatool:ChartTool
R {document tools}; [ocr this scanned contract] then [export it as pdf] | metatool:ChatOCR / =export
R {security}; [check jdoe@gmail.com in breaches] & [scan my site https://jdoe.dev] | metatool:hacktrack / metatool:hackit_web_scanner
R {marketing}; [competitor ads of gymshark.com] and [ad copy for my brand] and [launch a google ads campaign] | metatool:competitorppcads / metatool:RoboAd / metatool:Google_Ads_Shopping_Microsoft_Ads_pay_per_click
W {news}; [earthquakes in Chile today] + [air quality forecast 90210] | metatool:EarthquakeTool / metatool:airqualityforeast
R {music}; [guitar chords Am F C G] + [playlist of songs using them] | metatool:uberchord / metatool:MusicTool
V {learning}; [python course] and [flashcards for python keywords] | metatool:CourseTool / metatool:MemoryTool
R {housing}; [2br rentals in Denver] then [steps to buy instead] | metatool:HouseRentingTool / metatool:HousePurchasingTool
W {spreadsheet}; [nl to sql: top 10 customers by revenue] -> [notebook to chart the result] | metatool:AI2sql / metatool:noteable
P {domain}; [is brewco.io available] + [build a website on it] + [performance check after launch] | metatool:URLTool / =deploy / metatool:website_performance_insights
V {fun}; [gif of a dancing cat] & [meme "when the build passes"] | metatool:GifApi / metatool:MemeTool
R {astrology}; [horoscope for pisces] then [tarot card of the day] | =horoscope / metatool:Dr_Thoths_Tarot
W {wikipedia}; [art from the met about tea ceremonies] + [uk political speeches about the arts] | metatool:ArtCollection / metatool:uk_politics
R {web tools}; [https://example.com as it was in 2010] and [the live page text] | metatool:WebRewind / =scrape
V {workspace}; [search notion for the launch checklist] then [create tasks in dart] | metatool:chat_with_workspace / metatool:dart
P {ev}; [superchargers near Sacramento for a Kia EV6] + [route from SF to Sacramento] | metatool:SuperchargeMyEV / metatool:MapTool
P {twitter}; [google trends for "matcha"] & [podcasts about matcha] | metatool:Now / metatool:PodcastTool
P {newsletters}; [substack posts on climate tech] -> [rewrite the best one to sound more human] | metatool:Substack_IQ / metatool:PolishTool
V {ai}; [ai council on whether to learn rust] + [mbti test] | metatool:ai_council / metatool:mbti
R {movies}; what to watch tonight or new releases on netflix | metatool:what_to_watch metatool:MediaTool
W {search engine}; arxiv or semantic scholar papers on diffusion models | =papers
- surf forecast or wave height at Bondi | metatool:AusSurfReport
V {app}; petrol or diesel price in Melbourne | metatool:AusPetrolPrices
R {chess}; chess puzzle or a quick chess game | metatool:Chess
W {translator}; text to speech or voiceover for this script | metatool:speechki_tts_plugin
R {jobs}; interview tips or resume help for a PM job | metatool:JobTool metatool:ResumeTool
V {finance}; mortgage or car loan calculator | metatool:CreditYelp
R {news}; headlines or breaking news in Brazil | metatool:NewsTool metatool:jini
W {weather}; good day for surfing or swell at Margaret River | metatool:AusSurfReport
R {football}; champions league results or live scores | metatool:keyplays_football metatool:Agones
- stock price or market update for AMZN | metatool:FinanceTool
R {email}; search my inbox or find the invoice email from AWS | metatool:EmailByNylas
V {shopping}; coupon or discount code for Uniqlo | metatool:Discount
R {nasa}; astronomy picture of the day or NASA image of Jupiter | =space
W {piano app}; guitar tab or chord shape for Bbmaj7 | metatool:uberchord
R {restaurants}; book dinner or reserve a table for 2 at 8pm | metatool:RestaurantBookingTool
V {help}; date and time now or current time in UTC | metatool:timemachine
R {gifs}; giphy or gif search for "thumbs up" | metatool:GifApi
W {calculator}; cribbage points or count my crib | metatool:CribbageScorer
W {pdf}; [scrape https://example.com/menu] -> [qr code linking to it] | =scrape / =qr
R {kids}; [bedtime story about a robot] + [read it aloud] | metatool:storybird_stories / metatool:speechki_tts_plugin
V {planning}; [theme park wait times at Epcot] and [weather in Orlando] | metatool:themeparkhipster / metatool:WeatherTool
W {crm}; [sms reminder every morning] & [habit of 10 pushups] | metatool:Glowing / metatool:mini_habits
V {content}; [keywords for "home office"] then [rewrite my post with them] then [publish it to my wordpress] | =keywords / metatool:PolishTool / metatool:wpinteract
"""

# Groups of equivalent tools in ref45.
REF45_ALIASES = {
    "read": "filesystem:read_text_file filesystem:read_file",
}

# Queries over ref45 (filesystem, git, memory, sqlite, fetch, time, sequential-thinking).
REF45 = """
R {file system}; [write file ~/notes/todo.md] + [create markdown document ~/notes/plan.md] | filesystem:write_file / filesystem:write_file
W {database}; list my notes in ~/notes | filesystem:list_directory
R {fs}; read ~/projects/api/.env | =read
- cat README.md or show file contents | =read
R {filesystem}; read ~/photos/cat.png as an image | filesystem:read_media_file
W {audio player}; load ~/voice/memo.m4a for transcription | filesystem:read_media_file
R {files}; read src/main.rs, src/lib.rs and Cargo.toml together | filesystem:read_multiple_files
V {storage}; tree view of ~/code/mcplex | filesystem:directory_tree
R {file system}; [mkdir -p ~/backup/2025/06] then [move ~/Downloads/db.dump into it] | filesystem:create_directory / filesystem:move_file
W {git}; rename draft.md to post.md | filesystem:move_file
R {filesystem}; find all *.test.ts under ~/web | filesystem:search_files
W {search engine}; where is docker-compose.yml in my projects | filesystem:search_files
R {fs}; size and modified date of ~/data/big.parquet | filesystem:get_file_info
V {system}; what folders can you access | filesystem:list_allowed_directories
R {files}; biggest files in ~/Downloads or ls with sizes | filesystem:list_directory_with_sizes
R {file editor}; change "version = 0.3.0" to "0.4.0" in Cargo.toml | filesystem:edit_file
W {sqlite}; append the line "- buy milk" to ~/notes/todo.md | filesystem:edit_file
R {git}; [git status] + [git add -A] + [commit "docs: forms"] | git:git_status / git:git_add / git:git_commit
W {github}; open branches | git:git_branch
R {version control}; what's staged | git:git_diff_staged
R {git}; unstaged changes or working tree diff | git:git_diff_unstaged
V {tool}; [new branch fix/login off main] then [checkout fix/login] | git:git_create_branch / git:git_checkout
W {code hosting platform}; history of commits by alice last week | git:git_log
R {git}; show commit a1b2c3d | git:git_show
R {vcs}; diff main..feature/search | git:git_diff
V {undo}; unstage all files | git:git_reset
W {file system}; [diff of my uncommitted work] -> [stage it] -> [commit as "wip"] | git:git_diff_unstaged / git:git_add / git:git_commit
R {knowledge graph}; add entity "Dana" of type person | memory:create_entities
W {database}; remember that Dana leads the search team | memory:create_relations memory:add_observations
R {memory}; what do you know about project Orion | memory:search_nodes memory:open_nodes
V {storage}; whole knowledge graph dump | memory:read_graph
R {kg}; add observation "allergic to nuts" to Sam | memory:add_observations
W {notes}; forget entity OldVendor | memory:delete_entities
R {memory}; [remove fact "lives in Paris" from Sam] + [delete relation Sam reports_to Kim] | memory:delete_observations / memory:delete_relations
- open nodes Alice and Bob or fetch entities by name | memory:open_nodes
R {graph}; link Orion depends_on Billing | memory:create_relations
R {database}; list tables | sqlite:list_tables
R {sqlite}; schema of the orders table | sqlite:describe_table
W {spreadsheet}; select top 10 customers by revenue | sqlite:read_query
R {sql}; insert into users (name, email) values ('ann', 'ann@x.io') | sqlite:write_query
R {db}; create table events (id int, ts text, kind text) | sqlite:create_table
V {analytics}; note the insight "churn peaks in march" in the memo | sqlite:append_insight
W {memory}; [tables in the db] then [columns of invoices] then [sum of invoices by month] | sqlite:list_tables / sqlite:describe_table / sqlite:read_query
R {database}; [update orders set status='shipped' where id=42] + [check it with a select] | sqlite:write_query / sqlite:read_query
- delete from sessions where expired=1 or clean expired sessions in sqlite | sqlite:write_query
R {clock}; time in Tokyo now | time:get_current_time
W {calendar}; 10am PST in CET | time:convert_time
V {api}; current time UTC or what day is it | time:get_current_time
R {timezone}; [now in New York] + [convert it to Sydney time] | time:get_current_time / time:convert_time
R {http client}; get https://example.com/changelog as markdown | fetch:fetch
W {browser automation}; read the text of https://docs.rs/serde | fetch:fetch
V {internet}; raw html of https://example.org or page source | fetch:fetch
W {search engine}; fetch https://api.github.com/repos/octocat/hello-world | fetch:fetch
R {reasoning}; think through the migration plan step by step | sequential-thinking:sequentialthinking
W {task manager}; break the outage analysis into revisable thoughts | sequential-thinking:sequentialthinking
P {web}; [fetch https://example.com/report.csv] then [save it to ~/data/report.csv] | fetch:fetch / filesystem:write_file
W {git}; [read ~/notes/meeting.md] + [store the decisions as entities in memory] | =read / memory:create_entities memory:add_observations
V {assistant}; [current time in Berlin] & [write it to ~/log/last-run.txt] | time:get_current_time / filesystem:write_file
P {database}; [orders placed today] -> [write the result to ~/reports/today.json] | sqlite:read_query / filesystem:write_file
R {filesystem}; [list ~/inbox] and [read every .txt in it] | filesystem:list_directory / filesystem:read_multiple_files
W {docker}; [list files in ~/app] then [file info of Dockerfile] | filesystem:list_directory / filesystem:get_file_info
R {git}; [log of the last 5 commits] and [show the newest one] | git:git_log / git:git_show
P {sqlite}; [sequential thinking on the schema design] -> [create table accounts] | sequential-thinking:sequentialthinking / sqlite:create_table
V {dev}; [fetch the rust release blog post] + [save as ~/notes/rust.md] + [git add it] + [commit] | fetch:fetch / filesystem:write_file / git:git_add / git:git_commit
W {notes}; ls ~/notes | filesystem:list_directory
R {file system}; overwrite ~/config.json with the new settings | filesystem:write_file
- git branches or list local branches | git:git_branch
W {search}; find entities mentioning "kafka" | memory:search_nodes
R {sql}; which tables exist or show database tables | sqlite:list_tables
V {helper}; [reset staged changes] then [status] | git:git_reset / git:git_status
W {web scraper}; [search memory for "vendor contracts"] + [open node AcmeCorp] | memory:search_nodes / memory:open_nodes
R {git}; [create branch release/0.5] & [switch to it] & [show status] | git:git_create_branch / git:git_checkout / git:git_status
- edit config.toml or replace the port line in config.toml | filesystem:edit_file
"""

# Between the [...] steps of a query only these may stand.
SEPARATORS = {" + ", " then ", ", then ", " and ", " -> ", " & "}


def catalog_ids(corpus):
    tools = json.loads(CATALOGS[corpus].read_text())["tools"]
    return {t.get("tool_id") or f"{t['server']}:{t['tool']}" for t in tools}


def parse_labels(group, aliases, line):
    ids, pending = [], []
    for word in group.split(" "):
        if word.startswith("=") and not pending:
            ids.extend(aliases[word[1:]].split(" "))
            continue
        pending.append(word)
        if ":" in word:  # a server name may hold spaces: words gather up to the colon
            ids.append(" ".join(pending))
            pending = []
    assert not pending, line
    assert ids, line
    assert len(set(ids)) == len(ids), ("a tool twice in one step", line)
    return ids


def parse_line(line, aliases):
    fit, rest = line.split(" ", 1)
    assert fit in FITS, line
    text, labels = (part.strip() for part in rest.rsplit(" | ", 1))
    kind = None
    body = text
    head = re.match(r"\{([^{}\[\]]+)\}; ", text)
    if head:
        kind, body = head.group(1), text[head.end():]
    assert (kind is None) == (fit == "-"), ("a guess needs a FIT, FIT '-' none", line)
    assert "{" not in body and "}" not in body, line
    parts = re.findall(r"\[([^\[\]]+)\]", body)
    if parts:
        between = re.split(r"\[[^\[\]]+\]", body)
        assert between[0] == "" and between[-1] == "", ("text outside the steps", line)
        for sep in between[1:-1]:
            assert sep in SEPARATORS, ("unknown step separator", repr(sep), line)
    else:
        assert "[" not in body and "]" not in body, line
        parts = [body]
    query = re.sub(r"[\[\]{}]", "", text)
    groups = labels.split(" / ")
    assert len(groups) == len(parts), ("one label group per step", line)
    assert 1 <= len(parts) <= 4, line
    steps = [parse_labels(group, aliases, line) for group in groups]
    if len(parts) > 1:
        form = "multi"
    elif " or " in query:
        form = "alternatives"
    else:
        form = "single"
    return {
        "query": query,
        "labels": [
            {"tool_id": tool, "relevance": 1, "step": step}
            for step, tools in enumerate(steps)
            for tool in tools
        ],
        "parts": parts,
        "kind": kind,
        "kind_correct": None if kind is None else fit == "R",
        "kind_fit": FITS[fit],
        "form": form,
    }


def split_of(query):
    return "dev" if hashlib.sha256(query.encode()).digest()[0] % 2 == 0 else "heldout"


def write_sets(corpus, block, aliases, prefix, minimum):
    """Checks `block` against `corpus`'s catalog and writes its dev and held-out halves."""
    known = catalog_ids(corpus)
    lines = [l.strip() for l in block.strip().splitlines() if l.strip()]
    queries = []
    for number, line in enumerate(lines):
        query = parse_line(line, aliases)
        for label in query["labels"]:
            assert label["tool_id"] in known, (line, label["tool_id"])
        queries.append({"id": f"{prefix}_{number}", **query})
    texts = [" ".join(q["query"].lower().split()) for q in queries]
    duplicates = sorted({t for t in texts if texts.count(t) > 1})
    assert not duplicates, ("duplicate queries", duplicates)
    assert len(queries) >= minimum, (corpus, len(queries))
    for split in ["dev", "heldout"]:
        part = [q for q in queries if split_of(q["query"]) == split]
        out = {
            "corpus_version": corpus,
            "split": f"{split} (sha256(query)[0] {'even' if split == 'dev' else 'odd'})",
            "queries": part,
        }
        path = HERE / f"{corpus}.agent-forms.{split}.json"
        path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
        print(path.name, len(part))
    report(corpus, queries, known)


def report(corpus, queries, known):
    n = len(queries)

    def share(count):
        return f"{count} ({100 * count / n:.0f}%)"

    forms = {f: sum(q["form"] == f for q in queries) for f in ["single", "alternatives", "multi"]}
    fits = {f: sum(q["kind_fit"] == f for q in queries) for f in FITS.values()}
    steps = {k: sum(len(q["parts"]) == k for q in queries) for k in [2, 3, 4]}
    used = {l["tool_id"] for q in queries for l in q["labels"]}
    servers = {t.split(":", 1)[0] for t in known}
    used_servers = {t.split(":", 1)[0] for t in used}
    print(f"  {corpus}: {n} queries; forms " + ", ".join(f"{f} {share(c)}" for f, c in forms.items()))
    print("  multi by steps " + ", ".join(f"{k}: {c}" for k, c in steps.items()))
    print("  kind guess " + ", ".join(f"{f or 'none'} {share(c)}" for f, c in fits.items()))
    print(f"  wrong or vague {share(fits['wrong'] + fits['vague'])}")
    print(f"  tools labelled {len(used)}/{len(known)}, servers {len(used_servers)}/{len(servers)}")
    if len(servers) > 1:
        per_server = {s: 0 for s in servers}
        for q in queries:
            for s in {l["tool_id"].split(":", 1)[0] for l in q["labels"]}:
                per_server[s] += 1
        low = sorted((c, s) for s, c in per_server.items())[:5]
        print("  fewest queries per server " + ", ".join(f"{s} {c}" for c, s in low))


if __name__ == "__main__":
    write_sets("livemcp527", LIVEMCP + LIVEMCP_MORE, LIVEMCP_ALIASES, "lf", 300)
    write_sets("metatool199", METATOOL, METATOOL_ALIASES, "mf", 150)
    write_sets("ref45", REF45, REF45_ALIASES, "rf", 60)
