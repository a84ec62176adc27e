"""The token-estimator corpus: seeded texts of many scripts and payloads, and a check of
:func:`cupel.counting.estimate_tokens` against OpenAI's cl100k_base on them.

    python -m benchmarks.token_corpus            # write benchmarks/data/token_corpus.jsonl
    python -m benchmarks.token_corpus --check    # ratios estimate / cl100k per category,
                                                 # short chat messages, timing

Every text is built here from embedded sentences, word lists and templates with a seeded
``random.Random`` (one per category), so the committed file is this module's output and
nothing is downloaded (tests/core/counting checks that the two agree). Sizes are drawn
log-uniformly between about 70 and 1,500 cl100k tokens (all fall within 50 to 2,000).
The check needs cl100k_base, which llama-index-core ships
(``llama_index.core.utils.get_tokenizer``).
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

CORPUS_PATH = Path(__file__).resolve().parent / "data" / "token_corpus.jsonl"
TEXTS_PER_CATEGORY = 30
_TOKENS = (70, 1500)  # the log-uniform range of each text's target size (cl100k tokens)

# ---------------------------------------------------------------------------------------
# Embedded material


def _words(text: str) -> list[str]:
    return text.split()


ENGLISH = """\
The meeting has been moved to Thursday afternoon because half of the team is traveling.
I think we should start with the smaller changes and leave the database migration for later.
She walked along the river until the lights of the old bridge came into view.
According to the report, revenue grew by 12.5% in the third quarter of 2023.
Please don't forget to bring your laptop, the charger, and a copy of the contract.
The committee's decision, however controversial, was ultimately accepted by most members.
Photosynthesis converts light energy into chemical energy stored in glucose molecules.
He hadn't expected the interview to last three hours, let alone to end with an offer.
If the temperature drops below freezing, the pipes in the basement may burst.
Our customer-support team answers roughly 4,000 tickets a week, most within a day.
The museum's collection includes manuscripts, maps and instruments from the 17th century.
Honestly, I'm not sure the new design is better; it just looks different.
Notwithstanding the foregoing, the licensee shall indemnify the licensor against all claims.
Dr. Patel explained that the symptoms usually disappear within two or three weeks.
The algorithm runs in logarithmic time, which makes it suitable for very large inputs.
We stayed at a small hotel near the station, and the breakfast was surprisingly good.
"Where are you going?" she asked, without looking up from her book.
Interest rates remained unchanged, although several economists had predicted a cut.
The children spent the whole afternoon building a fort out of blankets and chairs.
Make sure the configuration file is readable by the service account before restarting.
In 1969, astronauts landed on the Moon for the first time in human history.
The recipe calls for two cups of flour, one egg, and a pinch of salt.
Unfortunately, the flight was delayed, so we missed our connection in Frankfurt.
The results were statistically significant (p < 0.01) across every age group we studied.
Could you send me the slides from yesterday's presentation when you get a chance?
The village sits at the foot of a mountain, surrounded by vineyards and olive groves.
Neither the manager nor the employees knew about the upcoming reorganization.
Thanks so much for your help last week, it really made a difference!
The bridge, completed in 1932, was once the longest suspension bridge in the world.
To reset your password, click the link in the email and follow the instructions.
Scientists believe the comet last passed near Earth about eighty thousand years ago.
Our quarterly objectives focus on reliability, onboarding, and international expansion.
The old lighthouse keeper kept a detailed journal of every storm he witnessed.
I'd recommend reading the documentation before you change any of the default settings.
Biodiversity is declining rapidly in many tropical regions because of deforestation.
The tenant agrees to pay rent on the first day of each calendar month.
After a long debate, the council voted seven to four in favor of the proposal.
The smell of fresh bread drifted out of the bakery and into the quiet street.
Why does the build pass on my machine but fail on the continuous-integration server?
Electric vehicles accounted for nearly one fifth of all new car sales last year.
It's worth noting that the survey only included respondents over the age of eighteen.
The orchestra rehearsed the symphony for weeks before the premiere in Vienna.
Let me know if Tuesday works for you; otherwise we can meet early next week.
Microorganisms in the soil play an essential role in recycling nutrients.
The prime minister announced a series of reforms aimed at reducing bureaucracy.
My grandmother still writes letters by hand and sends them through the post.
The API returns a paginated list of results, twenty items per page by default.
Several witnesses described a bright flash followed by a loud, rumbling noise.
Our hiking trail climbed steadily through pine forest before reaching the ridge.
The invoice must be paid within thirty days of receipt, without any deduction.
Although the evidence was circumstantial, the jury found the defendant guilty.
We're planning a small celebration for Maria's birthday on Saturday evening.
Cognitive behavioral therapy has proven effective for treating anxiety disorders.
The warehouse was converted into apartments, a gallery, and a rooftop restaurant.
Before submitting, double-check that every field in the form has been completed.
Archaeologists uncovered pottery fragments dating back more than four thousand years.
Sorry for the late reply, I was out of the office for most of the week.
The river floods almost every spring, so the farmers built their houses on stilts.
Performance improved dramatically once we added an index on the customer column.
The novel follows three generations of a family living in a small coastal town.
Wind turbines generated a record share of the country's electricity in January.
I can't believe it's already December; this year has gone by so quickly.
Participants were randomly assigned to either the treatment or the control group.
The ferry leaves every forty-five minutes, weather permitting.
Jonathan's proposal was thorough, well-researched, and refreshingly easy to read.
Overfishing has pushed several species of cod to the brink of collapse.
The firmware update fixes a bug that caused the device to overheat while charging.
Our neighbors adopted a rescue dog, a shy greyhound named Biscuit.
Run `pip install --upgrade cupel-context` and restart the kernel before importing the package.
The `max_tokens` parameter caps the response length; see docs/configuration.md for details.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED.
IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM OR DAMAGES.
Kubernetes schedules pods onto nodes according to resource requests, taints and tolerations.
The NASA/ESA mission will study how the solar wind interacts with Jupiter's magnetosphere.
Set OPENAI_API_KEY (or AZURE_OPENAI_ENDPOINT) in your environment; never commit it to Git.
Wojciech, Siobhan and Nguyen met at the Reykjavik conference on cryptography in mid-October.
Pharmacokinetic studies showed that ibuprofen's half-life was unaffected by co-administration.
Use the --dry-run flag to preview the changes; add -v (or -vv) for more verbose output.
The PostgreSQL query planner chose a sequential scan over the idx_orders_created_at index.
Mitochondrial dysfunction has been implicated in neurodegenerative diseases such as Parkinson's.
Our SLA guarantees 99.95% uptime, measured monthly, excluding scheduled maintenance windows.
See https://example.com/docs/v2/getting-started#installation for platform-specific notes.
Thermodynamically, the reaction is favorable, but kinetically it proceeds extremely slowly.
FYI: the Q3 OKRs are in the shared drive under /Planning/2024/Q3-OKRs-final-v2.xlsx.
Idempotency keys let clients safely retry POST requests without creating duplicate charges.
Chrysanthemums, hydrangeas and rhododendrons bloomed along the Huguenot cemetery's walls.
The defendant's counsel moved to suppress the evidence, citing an unconstitutional search.
WARNING: this operation permanently deletes all snapshots older than thirty days.
"""

ENGLISH_NAMES = [
    "Alice",
    "Ben",
    "Chen",
    "Daniela",
    "Emeka",
    "Fatima",
    "George",
    "Hiroshi",
    "Ingrid",
    "Jamal",
    "Katarzyna",
    "Liam",
    "Mei",
    "Nikolai",
    "Olivia",
    "Priya",
    "Quentin",
    "Rosa",
]
ENGLISH_CHAT = [
    "Hey {name}, are you free for a quick call?",
    "Sure, give me five minutes.",
    "Can you summarize the main points of the article for me?",
    "{name} said the deadline is {day}, not Friday.",
    "What's the difference between a list and a tuple?",
    "I've attached the updated figures for {month}.",
    "That makes sense. Thanks for explaining it so clearly!",
    "How many people signed up for the workshop on {day}?",
    "Let's aim for {number} participants and see how it goes.",
    "ok sounds good, talk tomorrow",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August"]

CHINESE = """\
今天天气很好，我们一起去公园散步吧。
这个项目的目标是提高系统的性能和稳定性。
请在下周五之前提交你的报告，谢谢。
我昨天在书店买了一本关于历史的书。
随着经济的发展，人们的生活水平不断提高。
会议将于明天上午九点在三楼会议室举行。
他从小就喜欢音乐，现在是一名钢琴老师。
这家餐厅的菜很好吃，价格也比较合理。
我们需要更多的数据来验证这个假设。
春节是中国最重要的传统节日之一。
如果你有任何问题，请随时联系我们的客服。
研究表明，适量运动有助于改善睡眠质量。
北京是中国的首都，也是一座历史悠久的城市。
孩子们在操场上玩得非常开心。
这本小说讲述了一个普通家庭三代人的故事。
由于天气原因，航班推迟了两个小时。
公司计划明年在上海开设新的办公室。
学习一门外语需要耐心和坚持。
请把文件保存到共享文件夹里。
这个问题比我们想象的要复杂得多。
她每天早上六点起床，然后去跑步。
新的政策将于下个月正式实施。
我们应该保护环境，减少塑料的使用。
老师耐心地回答了学生们的每一个问题。
这座桥建于一九三二年，至今仍在使用。
人工智能正在改变我们的工作方式。
他们在山上看到了美丽的日出。
这次旅行让我认识了很多新朋友。
请确认您的地址和电话号码是否正确。
市场部门正在准备下一季度的推广活动。
医生建议他多喝水，注意休息。
图书馆周末的开放时间是上午十点到下午五点。
经过多年的努力，他终于实现了自己的梦想。
这款手机的电池可以使用一整天。
我们的团队由来自不同国家的工程师组成。
河边有一棵很老的柳树，夏天很多人在树下乘凉。
根据统计，今年的游客人数比去年增加了百分之十五。
软件更新以后，系统运行得更快了。
你觉得这个方案怎么样？有没有需要修改的地方？
爷爷喜欢在院子里种花和蔬菜。
我們明天早上在車站見面，不要遲到。
這個城市的夜景非常漂亮，值得一看。
請問這附近有沒有便利商店？
他對這個問題的看法與眾不同。
臺灣的夜市有很多好吃的小吃。
"""

JAPANESE = """\
今日はとても天気がいいので、散歩に行きましょう。
このプロジェクトの目的は、システムの性能を向上させることです。
来週の金曜日までに報告書を提出してください。
昨日、駅の近くの本屋で歴史の本を買いました。
会議は明日の午前十時から三階の会議室で行われます。
彼は子供のころから音楽が好きで、今はピアノの先生をしています。
このレストランの料理はおいしくて、値段も手ごろです。
仮説を検証するためには、もっと多くのデータが必要です。
何か質問があれば、いつでもお問い合わせください。
研究によると、適度な運動は睡眠の質を改善するそうです。
東京は日本の首都で、世界でも有数の大都市です。
天候不良のため、飛行機の出発が二時間遅れました。
新しいソフトウェアをインストールしてから、パソコンの動作が速くなりました。
外国語を学ぶには、忍耐と継続が必要です。
ファイルを共有フォルダに保存しておいてください。
彼女は毎朝六時に起きて、ジョギングをしています。
環境を守るために、プラスチックの使用を減らしましょう。
先生は学生たちの質問に一つ一つ丁寧に答えました。
人工知能は私たちの働き方を大きく変えつつあります。
山の上から見た日の出は本当にきれいでした。
ご住所とお電話番号に間違いがないかご確認ください。
図書館は週末、午前十時から午後五時まで開いています。
長年の努力の末、彼はついに夢をかなえました。
このスマートフォンのバッテリーは一日中持ちます。
私たちのチームには、さまざまな国のエンジニアがいます。
桜の季節になると、公園はたくさんの人でにぎわいます。
お忙しいところ恐れ入りますが、ご確認のほどよろしくお願いいたします。
電車が遅れているので、少し遅刻するかもしれません。
このアプリを使えば、簡単に予約ができます。
週末は家族と一緒に温泉に行く予定です。
"""

KOREAN = """\
오늘은 날씨가 정말 좋아서 공원에 산책하러 가고 싶어요.
이 프로젝트의 목표는 시스템의 성능과 안정성을 높이는 것입니다.
다음 주 금요일까지 보고서를 제출해 주세요.
어제 역 근처 서점에서 역사에 관한 책을 한 권 샀어요.
회의는 내일 오전 아홉 시에 삼 층 회의실에서 열립니다.
그는 어릴 때부터 음악을 좋아해서 지금은 피아노 선생님이 되었습니다.
이 식당은 음식이 맛있고 가격도 적당한 편이에요.
가설을 검증하려면 더 많은 데이터가 필요합니다.
궁금한 점이 있으시면 언제든지 고객센터로 연락해 주세요.
연구에 따르면 적당한 운동은 수면의 질을 개선하는 데 도움이 됩니다.
서울은 한국의 수도이자 역사가 깊은 도시입니다.
날씨 때문에 비행기 출발이 두 시간 지연되었습니다.
소프트웨어를 업데이트한 후에 컴퓨터가 훨씬 빨라졌어요.
외국어를 배우려면 인내심과 꾸준함이 필요합니다.
파일을 공유 폴더에 저장해 주시기 바랍니다.
그녀는 매일 아침 여섯 시에 일어나서 조깅을 합니다.
환경을 보호하기 위해 플라스틱 사용을 줄여야 합니다.
선생님은 학생들의 질문에 하나하나 친절하게 대답해 주셨습니다.
인공지능은 우리가 일하는 방식을 크게 바꾸고 있습니다.
산 위에서 본 일출은 정말 아름다웠어요.
주소와 전화번호가 정확한지 다시 한번 확인해 주세요.
도서관은 주말에 오전 열 시부터 오후 다섯 시까지 문을 엽니다.
오랜 노력 끝에 그는 마침내 꿈을 이루었습니다.
이 휴대폰의 배터리는 하루 종일 사용할 수 있습니다.
우리 팀에는 여러 나라에서 온 엔지니어들이 있습니다.
봄이 되면 벚꽃을 보러 오는 사람들로 공원이 붐빕니다.
바쁘신 와중에 죄송하지만 확인 부탁드립니다.
지하철이 늦어져서 조금 늦을 것 같아요.
주말에는 가족과 함께 바다에 갈 예정입니다.
할머니께서는 매년 김장을 직접 하십니다.
"""

CYRILLIC = """\
Сегодня отличная погода, поэтому мы решили погулять в парке.
Цель этого проекта заключается в повышении производительности системы.
Пожалуйста, отправьте отчёт до следующей пятницы.
Вчера я купил в книжном магазине интересную книгу по истории.
Совещание состоится завтра в десять часов утра в конференц-зале.
С детства он любил музыку, а теперь преподаёт игру на фортепиано.
В этом ресторане вкусно готовят, и цены вполне разумные.
Чтобы проверить гипотезу, нам нужно собрать больше данных.
Если у вас возникнут вопросы, обращайтесь в службу поддержки.
Исследования показывают, что умеренные физические нагрузки улучшают сон.
Москва является столицей России и одним из крупнейших городов Европы.
Из-за плохой погоды вылет самолёта задержали на два часа.
После обновления программы компьютер стал работать заметно быстрее.
Изучение иностранного языка требует терпения и настойчивости.
Сохраните, пожалуйста, файл в общей папке.
Каждое утро она встаёт в шесть часов и отправляется на пробежку.
Чтобы защитить окружающую среду, нужно меньше использовать пластик.
Учитель терпеливо ответил на каждый вопрос студентов.
Искусственный интеллект меняет то, как мы работаем.
Рассвет, который мы увидели с вершины горы, был невероятно красивым.
Проверьте, пожалуйста, правильность вашего адреса и номера телефона.
По выходным библиотека открыта с десяти утра до пяти вечера.
После многих лет упорного труда он наконец осуществил свою мечту.
Наша команда состоит из инженеров из разных стран.
Поезд опаздывает, поэтому я, возможно, приду немного позже.
На выходных мы всей семьёй поедем на дачу.
Сьогодні чудова погода, тому ми вирішили прогулятися парком.
Будь ласка, надішліть звіт до наступної п'ятниці.
Дослідження показують, що помірні фізичні навантаження покращують сон.
Днес времето е прекрасно и решихме да се разходим в парка.
"""

ARABIC = """\
الطقس جميل اليوم، لذلك قررنا أن نتمشى في الحديقة.
الهدف من هذا المشروع هو تحسين أداء النظام واستقراره.
يرجى إرسال التقرير قبل يوم الجمعة القادم.
اشتريت أمس كتابا عن التاريخ من مكتبة قريبة من المحطة.
سيعقد الاجتماع غدا في الساعة العاشرة صباحا في قاعة الاجتماعات.
كان يحب الموسيقى منذ طفولته، وهو الآن معلم بيانو.
الطعام في هذا المطعم لذيذ والأسعار معقولة.
نحتاج إلى مزيد من البيانات للتحقق من هذه الفرضية.
إذا كانت لديكم أي أسئلة، فلا تترددوا في الاتصال بخدمة العملاء.
تشير الدراسات إلى أن ممارسة الرياضة باعتدال تحسن جودة النوم.
القاهرة هي عاصمة مصر وواحدة من أكبر المدن في العالم العربي.
تأخرت الرحلة ساعتين بسبب سوء الأحوال الجوية.
بعد تحديث البرنامج أصبح الحاسوب يعمل بسرعة أكبر.
يتطلب تعلم لغة أجنبية الصبر والمثابرة.
يرجى حفظ الملف في المجلد المشترك.
تستيقظ كل صباح في الساعة السادسة وتذهب للركض.
يجب أن نقلل من استخدام البلاستيك لحماية البيئة.
أجاب المعلم بصبر على جميع أسئلة الطلاب.
الذكاء الاصطناعي يغير طريقة عملنا بشكل كبير.
كان شروق الشمس من قمة الجبل رائعا حقا.
يرجى التأكد من صحة عنوانك ورقم هاتفك.
بعد سنوات طويلة من العمل الجاد حقق حلمه أخيرا.
يتكون فريقنا من مهندسين من بلدان مختلفة.
سنذهب مع العائلة إلى البحر في عطلة نهاية الأسبوع.
امروز هوا خیلی خوب است و تصمیم گرفتیم در پارک قدم بزنیم.
لطفا گزارش را تا جمعه آینده ارسال کنید.
"""

DEVANAGARI = """\
आज मौसम बहुत अच्छा है, इसलिए हमने पार्क में टहलने का फैसला किया।
इस परियोजना का लक्ष्य प्रणाली के प्रदर्शन और स्थिरता में सुधार करना है।
कृपया अगले शुक्रवार से पहले अपनी रिपोर्ट भेज दें।
कल मैंने स्टेशन के पास की किताबों की दुकान से इतिहास की एक किताब खरीदी।
बैठक कल सुबह दस बजे तीसरी मंज़िल के सभा कक्ष में होगी।
उसे बचपन से ही संगीत पसंद था और अब वह पियानो सिखाता है।
इस रेस्टोरेंट का खाना स्वादिष्ट है और दाम भी ठीक हैं।
इस परिकल्पना की पुष्टि के लिए हमें और आंकड़ों की ज़रूरत है।
यदि आपके कोई प्रश्न हों, तो कृपया हमारी ग्राहक सेवा से संपर्क करें।
शोध से पता चलता है कि नियमित व्यायाम से नींद की गुणवत्ता बेहतर होती है।
दिल्ली भारत की राजधानी है और एक बहुत पुराना शहर है।
खराब मौसम के कारण उड़ान दो घंटे देर से रवाना हुई।
सॉफ़्टवेयर अपडेट करने के बाद कंप्यूटर पहले से तेज़ चलने लगा।
कोई नई भाषा सीखने के लिए धैर्य और लगन दोनों चाहिए।
कृपया फ़ाइल को साझा फ़ोल्डर में सहेज दें।
वह हर सुबह छह बजे उठती है और दौड़ने जाती है।
पर्यावरण की रक्षा के लिए हमें प्लास्टिक का उपयोग कम करना चाहिए।
शिक्षक ने धैर्यपूर्वक छात्रों के हर सवाल का जवाब दिया।
कृत्रिम बुद्धिमत्ता हमारे काम करने के तरीके को बदल रही है।
पहाड़ की चोटी से देखा गया सूर्योदय सचमुच बहुत सुंदर था।
कृपया अपना पता और फ़ोन नंबर एक बार फिर जांच लें।
कई वर्षों की मेहनत के बाद आखिरकार उसने अपना सपना पूरा किया।
हमारी टीम में अलग-अलग देशों के इंजीनियर काम करते हैं।
सप्ताहांत में हम परिवार के साथ गांव जाने वाले हैं।
आज हवामान खूप छान आहे, म्हणून आम्ही बागेत फिरायला गेलो.
कृपया पुढच्या शुक्रवारपर्यंत अहवाल पाठवा.
"""

LATIN = """\
Aujourd'hui, il fait très beau : nous avons décidé de nous promener au bord de l'eau.
L'objectif de ce projet est d'améliorer les performances et la fiabilité du système.
Pourriez-vous m'envoyer le rapport avant vendredi prochain, s'il vous plaît ?
Les élèves ont posé beaucoup de questions après la conférence sur l'économie.
Nous espérons que la réunion de mercredi permettra de résoudre ces problèmes.
Heute ist das Wetter so schön, dass wir einen Spaziergang im Park machen.
Bitte schicken Sie mir den Bericht bis nächsten Freitag zurück.
Die Besprechung findet morgen um zehn Uhr im Konferenzraum im dritten Stock statt.
Nach dem Softwareupdate läuft der Rechner deutlich schneller als zuvor.
Für die Überprüfung der Hypothese benötigen wir wesentlich mehr Daten.
Hoy hace muy buen tiempo, así que decidimos dar un paseo por el parque.
El objetivo de este proyecto es mejorar el rendimiento y la estabilidad del sistema.
¿Podrías enviarme el informe antes del próximo viernes?
La reunión se celebrará mañana a las diez en la sala de conferencias del tercer piso.
Después de muchos años de esfuerzo, por fin cumplió su sueño.
A reunião foi adiada para quinta-feira porque metade da equipe está viajando.
Não se esqueça de trazer o computador e uma cópia do contrato.
Dzisiaj jest piękna pogoda, więc postanowiliśmy pójść na spacer do parku.
Proszę przesłać sprawozdanie do przyszłego piątku.
Spotkanie odbędzie się jutro o dziesiątej w sali konferencyjnej na trzecim piętrze.
Hôm nay thời tiết rất đẹp nên chúng tôi quyết định đi dạo trong công viên.
Mục tiêu của dự án này là cải thiện hiệu suất và độ ổn định của hệ thống.
Vui lòng gửi báo cáo trước thứ Sáu tuần sau.
Bugün hava çok güzel, bu yüzden parkta yürüyüş yapmaya karar verdik.
Lütfen raporu gelecek cuma gününe kadar gönderin.
Dnes je krásné počasí, a proto jsme se rozhodli jít na procházku do parku.
Schůzka se uskuteční zítra v deset hodin v zasedací místnosti.
I dag er vejret så godt, at vi har besluttet at gå en tur i parken.
Idag är det fint väder, så vi tog en promenad längs stranden.
Oggi il tempo è bellissimo, quindi abbiamo deciso di fare una passeggiata nel parco.
La riunione si terrà domani alle dieci nella sala conferenze al terzo piano.
Vandaag is het mooi weer, dus we hebben besloten om in het park te wandelen.
Stuur het verslag alstublieft vóór volgende week vrijdag.
Ma este foarte frumos afară, așa că am decis să ne plimbăm prin parc.
Ma nagyon szép az idő, ezért úgy döntöttünk, hogy sétálunk egyet a parkban.
Tänään on kaunis sää, joten päätimme lähteä kävelylle puistoon.
"""

EMOJI_SINGLE = _words(
    """
😀 😃 😄 😁 😆 😅 😂 🤣 😊 😇 🙂 😉 😍 🥰 😘 😋 😎 🤓 🤔 🤨 😐 😴 😭 😡 🥳 🤯 😱 🙏 👍 👎 👏 🙌
💪 👀 🎉 🎊 🎂 🎁 🔥 ✨ ⭐ 🌟 💯 ✅ ❌ ⚠️ ❤️ 💙 💚 💛 🧡 💜 🖤 🤍 💔 🚀 🛸 🌍 🌈 ☀️ 🌧️ ❄️
🍕 🍔 🍣 🍩 ☕ 🍺 🐶 🐱 🦊 🐼 🐧 🦄 📈 📉 📌 📎 💡 🔧 🛠️ 💻 📱
"""
)
EMOJI_SEQUENCES = [
    "👍🏽",
    "👋🏻",
    "🙏🏾",
    "👩‍💻",
    "👨‍👩‍👧‍👦",
    "🧑‍🚀",
    "🏳️‍🌈",
    "🇺🇸",
    "🇯🇵",
    "🇩🇪",
    "🇧🇷",
    "🇮🇳",
    "❤️‍🔥",
    "🤷‍♀️",
    "🤦‍♂️",
    "👩🏿‍🔬",
]
EMOJI_PHRASES = [
    "great job everyone",
    "see you tomorrow",
    "happy birthday",
    "that's hilarious",
    "shipping it now",
    "coffee time",
    "can't wait",
    "love this",
    "on my way",
    "tests are green again",
    "weekend mode",
    "thank you so much",
    "good morning team",
]

CODE_WORDS = _words(
    "user account order item price total count index value key name file path buffer "
    "cache request response handler client server token session config option result "
    "error message event queue worker task job batch record row column table query "
    "node tree graph edge parent child list map set data payload header body stream"
)
CODE_VERBS = _words("get set load save parse build create update delete find fetch send read write")

PROSE_WORDS = _words(
    "the of and to in is that it for on with as was at by this be from or an are not have "
    "system data model result value process time people year way day thing world life hand "
    "part place case week company number group problem fact new first last long great "
    "little own other old right big high different small large next early young important "
    "public bad same able quickly carefully however therefore meanwhile implementation "
    "infrastructure responsibility configuration documentation performance relationship "
    "environment development opportunity international organization understanding"
)

URL_HOSTS = [
    "example.com",
    "api.example.org",
    "docs.python.org",
    "github.com",
    "www.wikipedia.org",
    "cdn.shop-assets.net",
    "storage.googleapis.com",
    "news.ycombinator.com",
    "localhost:8080",
    "search.example.co.uk",
    "login.microsoftonline.com",
    "s3.us-east-1.amazonaws.com",
]

LOG_LEVELS = ["INFO", "DEBUG", "WARN", "ERROR"]
LOG_MESSAGES = [
    "request completed",
    "cache miss for key",
    "retrying connection",
    "user logged in",
    "payment authorized",
    "slow query detected",
    "worker started",
    "shutting down",
    "failed to parse header",
    "token refreshed",
    "upload finished",
    "rate limit exceeded",
]


# ---------------------------------------------------------------------------------------
# Helpers


def _lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line]


def _fill(target: int, piece: Callable[[], str], sep: str = " ") -> str:
    """Pieces joined by ``sep`` until the text is at least ``target`` characters long."""
    parts: list[str] = []
    size = 0
    while size < target:
        part = piece()
        parts.append(part)
        size += len(part) + len(sep)
    return sep.join(parts)


def _identifier(rng: random.Random, style: str) -> str:
    words = [rng.choice(CODE_VERBS)] if rng.random() < 0.5 else []
    words += rng.sample(CODE_WORDS, rng.randint(1, 3))
    if style == "snake":
        return "_".join(words)
    return words[0] + "".join(word.title() for word in words[1:])


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _sentence_text(rng: random.Random, target: int, sentences: list[str], joiner: str) -> str:
    """Paragraphs of 2-7 sentences, joined with ``joiner`` inside a paragraph."""

    def paragraph() -> str:
        return joiner.join(rng.choice(sentences) for _ in range(rng.randint(2, 7)))

    return _fill(target, paragraph, sep=rng.choice(["\n\n", "\n"]))


# ---------------------------------------------------------------------------------------
# Categories: each makes one text of about ``target`` characters


def english(rng: random.Random, target: int) -> str:
    style = rng.random()
    if style < 0.2:  # a chat transcript

        def turn() -> str:
            line = rng.choice(ENGLISH_CHAT).format(
                name=rng.choice(ENGLISH_NAMES),
                day=rng.choice(DAYS),
                month=rng.choice(MONTHS),
                number=rng.randint(5, 500),
            )
            return f"{rng.choice(ENGLISH_NAMES)}: {line}"

        return _fill(target, turn, sep="\n")
    sentences = _lines(ENGLISH)
    if style < 0.4:  # a document: headings, bullet lists and paragraphs

        def section() -> str:
            heading = " ".join(rng.choice(PROSE_WORDS) for _ in range(rng.randint(1, 4)))
            bullets = [f"- {rng.choice(sentences)}" for _ in range(rng.randint(0, 4))]
            body = " ".join(rng.choice(sentences) for _ in range(rng.randint(1, 4)))
            return "\n\n".join([f"## {heading.capitalize()}", body, "\n".join(bullets)]).strip()

        return _fill(target, section, sep="\n\n")
    text = _sentence_text(rng, target, sentences, " ")
    if style > 0.9:  # typographic quotes and dashes, as pasted from a word processor
        text = text.replace('"Where', "“Where").replace('?" she', "?” she").replace(", ", " — ", 3)
    return text


def latin(rng: random.Random, target: int) -> str:
    return _sentence_text(rng, target, _lines(LATIN), " ")


def chinese(rng: random.Random, target: int) -> str:
    return _sentence_text(rng, target, _lines(CHINESE), "")


def japanese(rng: random.Random, target: int) -> str:
    return _sentence_text(rng, target, _lines(JAPANESE), "")


def korean(rng: random.Random, target: int) -> str:
    return _sentence_text(rng, target, _lines(KOREAN), " ")


def cyrillic(rng: random.Random, target: int) -> str:
    return _sentence_text(rng, target, _lines(CYRILLIC), " ")


def arabic(rng: random.Random, target: int) -> str:
    return _sentence_text(rng, target, _lines(ARABIC), " ")


def devanagari(rng: random.Random, target: int) -> str:
    return _sentence_text(rng, target, _lines(DEVANAGARI), " ")


def emoji(rng: random.Random, target: int) -> str:
    def message() -> str:
        marks = "".join(
            rng.choice(EMOJI_SEQUENCES) if rng.random() < 0.2 else rng.choice(EMOJI_SINGLE)
            for _ in range(rng.randint(1, 4))
        )
        phrase = rng.choice(EMOJI_PHRASES)
        if rng.random() < 0.3:
            return marks
        return f"{phrase} {marks}" if rng.random() < 0.6 else f"{marks} {phrase}!"

    return _fill(target, message, sep=rng.choice(["\n", " "]))


def _json_value(rng: random.Random, depth: int) -> object:
    kind = rng.random()
    if depth < 3 and kind < 0.25:
        return {_json_key(rng): _json_value(rng, depth + 1) for _ in range(rng.randint(1, 5))}
    if depth < 3 and kind < 0.35:
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(1, 4))]
    if kind < 0.5:
        return rng.choice([rng.randint(0, 100), rng.randint(-(10**9), 10**9)])
    if kind < 0.58:
        return round(rng.uniform(-1000, 1000), rng.randint(1, 6))
    if kind < 0.63:
        return rng.choice([True, False, None])
    if kind < 0.72:
        return rng.choice(
            [
                _uuid(rng),
                f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23)}h",
                f"https://{rng.choice(URL_HOSTS)}/{rng.choice(CODE_WORDS)}/{rng.randint(1, 9999)}",
            ]
        )
    if kind < 0.82:  # non-ASCII values: names, cities, short sentences
        return rng.choice(
            [
                "José García",
                "Zoë Müller",
                "東京都渋谷区",
                "北京市朝阳区",
                "서울특별시",
                "Москва",
                "القاهرة",
                "नई दिल्ली",
                rng.choice(_lines(CHINESE)),
                rng.choice(_lines(CYRILLIC)),
                "Café ☕ open 🎉",
            ]
        )
    return " ".join(rng.choice(PROSE_WORDS) for _ in range(rng.randint(1, 12)))


def _json_key(rng: random.Random) -> str:
    return _identifier(rng, rng.choice(["snake", "camel"]))


def json_payload(rng: random.Random, target: int) -> str:
    indent = rng.choice([None, None, 2, 4])
    ensure_ascii = rng.random() < 0.3
    records: list[object] = []
    while len(json.dumps(records, ensure_ascii=ensure_ascii, indent=indent)) < target:
        records.append({_json_key(rng): _json_value(rng, 1) for _ in range(rng.randint(2, 6))})
    doc: object = records if rng.random() < 0.7 else {"data": records, "count": len(records)}
    return json.dumps(doc, ensure_ascii=ensure_ascii, indent=indent)


def _python_function(rng: random.Random) -> str:
    name = _identifier(rng, "snake")
    items, item, out = (_identifier(rng, "snake") for _ in range(3))
    doc = rng.choice(_lines(ENGLISH))
    lines = [
        f"def {name}({items}: list[dict[str, int]], limit: int = {rng.randint(1, 100)}) -> dict:",
        f'    """{doc}"""',
        f"    {out}: dict[str, int] = {{}}",
        f"    for index, {item} in enumerate({items}):",
        "        if index >= limit:",
        "            break",
        f'        {out}[str(index)] = {item}.get("{rng.choice(CODE_WORDS)}", {rng.randint(0, 9)})',
        f'    logger.debug("{rng.choice(LOG_MESSAGES)}: %s", {out})',
        f"    return {out}",
    ]
    return "\n".join(lines)


def _python_class(rng: random.Random) -> str:
    name = "".join(w.title() for w in rng.sample(CODE_WORDS, 2))
    fields = [_identifier(rng, "snake") for _ in range(rng.randint(2, 5))]
    lines = ["@dataclass(frozen=True)", f"class {name}:"]
    lines += [f"    {f}: {rng.choice(['int', 'str', 'float', 'list[str]'])}" for f in fields]
    lines += [
        "",
        "    def describe(self) -> str:",
        f'        return f"{name}({{self.{fields[0]}!r}})"',
    ]
    return "\n".join(lines)


def _js_function(rng: random.Random) -> str:
    name, arg, key = (_identifier(rng, "camel") for _ in range(3))
    tab = rng.choice(["  ", "    ", "\t"])
    lines = [
        f"export async function {name}({arg}, options = {{}}) {{",
        f"{tab}const {key} = await fetch(`/api/{rng.choice(CODE_WORDS)}/${{{arg}.id}}`);",
        f"{tab}if (!{key}.ok) {{",
        f"{tab}{tab}throw new Error(`{rng.choice(LOG_MESSAGES)}: ${{{key}.status}}`);",
        f"{tab}}}",
        f"{tab}// {rng.choice(_lines(ENGLISH))}",
        f"{tab}const items = (await {key}.json()).filter((x) => x.{key} !== null);",
        f"{tab}return items.map(({{ id, ...rest }}) => ({{ id, ...rest, seen: true }}));",
        "}",
    ]
    return "\n".join(lines)


def _constants(rng: random.Random) -> str:
    names = [_identifier(rng, "snake").upper() for _ in range(rng.randint(3, 8))]
    width = max(map(len, names))
    return "\n".join(
        f"{n:<{width}} = {rng.randint(0, 4096)}  # {rng.choice(PROSE_WORDS)}" for n in names
    )


def _sql(rng: random.Random) -> str:
    table, column, other = (_identifier(rng, "snake") for _ in range(3))
    return (
        f"SELECT t.id, t.{column}, COUNT(*) AS n\n"
        f"FROM {table} AS t\n"
        f"    LEFT JOIN {other} o ON o.{table}_id = t.id\n"
        f"WHERE t.created_at >= '2024-{rng.randint(1, 12):02d}-01' AND t.{column} IS NOT NULL\n"
        f"GROUP BY t.id, t.{column}\n"
        f"ORDER BY n DESC\nLIMIT {rng.randint(10, 500)};"
    )


def _shell(rng: random.Random) -> str:
    word = rng.choice(CODE_WORDS)
    return "\n".join(
        [
            f"$ git checkout -b feature/{word}-{rng.randint(100, 999)}",
            f"$ docker run --rm -it -v $(pwd):/app -e LOG_LEVEL=debug {word}:latest",
            f'$ grep -rn "{_identifier(rng, "camel")}" src/ | head -n {rng.randint(5, 50)}',
            f"$ curl -sS -X POST -H 'Content-Type: application/json' localhost:8080/{word}",
        ][: rng.randint(2, 4)]
    )


def code(rng: random.Random, target: int) -> str:
    makers = [_python_function, _python_class, _js_function, _constants, _sql, _shell]
    return _fill(target, lambda: rng.choice(makers)(rng), sep="\n\n")


def _url(rng: random.Random) -> str:
    path = "/".join(
        rng.choice([rng.choice(CODE_WORDS), str(rng.randint(1, 99999)), _hex(rng, 12)])
        for _ in range(rng.randint(1, 5))
    )

    def parameter() -> str:
        key = _identifier(rng, "snake")
        values = [str(rng.randint(0, 10**6)), rng.choice(PROSE_WORDS), "%E4%B8%AD%E6%96%87"]
        return f"{key}={rng.choice([*values, _hex(rng, 8), 'true'])}"

    query = "&".join(parameter() for _ in range(rng.randint(0, 5)))
    scheme = rng.choice(["https", "https", "http"])
    url = f"{scheme}://{rng.choice(URL_HOSTS)}/{path}"
    return f"{url}?{query}" if query else url


def url(rng: random.Random, target: int) -> str:
    return _fill(target, lambda: _url(rng), sep=rng.choice(["\n", " ", ", "]))


def base64_payload(rng: random.Random, target: int) -> str:
    raw = rng.randbytes(target * 3 // 4)
    encoded = (base64.urlsafe_b64encode if rng.random() < 0.3 else base64.b64encode)(raw).decode()
    if rng.random() < 0.5:  # MIME line wrapping
        encoded = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
    return rng.choice(["", "data:image/png;base64,", "Attachment: "]) + encoded


def logs(rng: random.Random, target: int) -> str:
    def line() -> str:
        day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        stamp = f"{day}T{clock}.{rng.randint(0, 999):03d}Z"
        ip = ".".join(str(rng.randint(1, 254)) for _ in range(4))
        fields = [
            f"request_id={_uuid(rng)}",
            f"trace={_hex(rng, 16)}",
            f"ip={ip}",
            f"latency_ms={rng.randint(1, 5000)}",
            f"path=/{rng.choice(CODE_WORDS)}/{rng.randint(1, 999)}",
            f"sha256={_hex(rng, 64)}",
            f"user={rng.choice(ENGLISH_NAMES).lower()}{rng.randint(1, 99)}",
        ]
        chosen = rng.sample(fields, rng.randint(1, 4))
        level, source, message = (
            rng.choice(LOG_LEVELS),
            rng.choice(CODE_WORDS),
            rng.choice(LOG_MESSAGES),
        )
        return f"{stamp} {level:5} [{source}] {message} {' '.join(chosen)}"

    return _fill(target, line, sep="\n")


def mixed(rng: random.Random, target: int) -> str:
    pieces: list[Callable[[], str]] = [
        lambda: _sentence_text(rng, 200, _lines(ENGLISH), " "),
        lambda: "```python\n" + _python_function(rng) + "\n```",
        lambda: "```json\n" + json_payload(rng, 150) + "\n```",
        lambda: rng.choice(_lines(CHINESE)) + rng.choice(_lines(JAPANESE)),
        lambda: rng.choice(_lines(KOREAN)) + " " + rng.choice(_lines(CYRILLIC)),
        lambda: f"| {rng.choice(CODE_WORDS)} | {rng.randint(0, 10**5)} | {rng.random():.3f} |",
        lambda: f"- {rng.choice(EMOJI_PHRASES)} {rng.choice(EMOJI_SINGLE)} {_url(rng)}",
        lambda: rng.choice(_lines(ARABIC)) + " " + rng.choice(_lines(DEVANAGARI)),
        lambda: f"## {rng.choice(PROSE_WORDS).title()} {rng.choice(PROSE_WORDS)}",
    ]
    return _fill(target, lambda: rng.choice(pieces)(), sep="\n\n")


# category → (maker, rough characters per cl100k token, used only to size the texts)
CATEGORIES: dict[str, tuple[Callable[[random.Random, int], str], float]] = {
    "english": (english, 4.8),
    "latin": (latin, 3.1),
    "chinese": (chinese, 0.9),
    "japanese": (japanese, 1.0),
    "korean": (korean, 1.05),
    "cyrillic": (cyrillic, 2.1),
    "arabic": (arabic, 1.45),
    "devanagari": (devanagari, 1.0),
    "emoji": (emoji, 1.35),
    "json": (json_payload, 3.5),
    "code": (code, 4.2),
    "url": (url, 2.85),
    "base64": (base64_payload, 1.4),
    "logs": (logs, 2.2),
    "mixed": (mixed, 2.9),
}


def generate() -> list[dict[str, str]]:
    """The corpus: ``TEXTS_PER_CATEGORY`` texts per category, in a fixed order."""
    rows = []
    low, high = math.log(_TOKENS[0]), math.log(_TOKENS[1])
    for category, (make, chars_per_token) in CATEGORIES.items():
        rng = random.Random(f"cupel-token-corpus/{category}")
        for _ in range(TEXTS_PER_CATEGORY):
            tokens = math.exp(rng.uniform(low, high))
            rows.append({"category": category, "text": make(rng, int(tokens * chars_per_token))})
    return rows


def to_jsonl(rows: list[dict[str, str]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def read_corpus(path: Path = CORPUS_PATH) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile of ``values``, interpolated linearly (numpy's default)."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def ratios(rows: list[dict[str, str]], count: Callable[[str], int]) -> dict[str, list[float]]:
    """Category → estimate / true count of each of its texts (``count`` is the truth)."""
    from cupel.counting import estimate_tokens

    by_category: dict[str, list[float]] = {}
    for row in rows:
        ratio = estimate_tokens(row["text"]) / count(row["text"])
        by_category.setdefault(row["category"], []).append(ratio)
    return by_category


CHAT_SEED = 20261230
"""The provider-bill benchmark's seed (``python -m benchmarks.provider_bill``)."""
WINDOW = 20
"""Messages per window in the short-message figures."""


def chat_messages(cases: int = 4) -> list[str]:
    """Chat messages of random common short words ("Down it between just where time new
    that very this most."): the prose parts of the provider-bill benchmark's first
    ``cases`` ``prose chat`` histories, in order."""
    from benchmarks.bill_cases import Text, generate_case

    return [
        part.text
        for number in range(cases)
        for message in generate_case("prose chat", number, seed=CHAT_SEED).messages
        for part in message.parts
        if isinstance(part, Text) and part.kind == "prose"
    ]


def english_sentences(rows: list[dict[str, str]]) -> list[str]:
    """The English texts of the corpus cut into single sentences (split on ``". "`` and
    at line ends), as short chat messages."""
    return [
        sentence
        for row in rows
        if row["category"] == "english"
        for line in row["text"].splitlines()
        for sentence in line.split(". ")
        if sentence.strip()
    ]


def window_ratios(estimates: list[int], counts: list[int], size: int = WINDOW) -> list[float]:
    """Estimate / true count summed over each run of ``size`` consecutive messages."""
    return [
        sum(estimates[i : i + size]) / sum(counts[i : i + size])
        for i in range(max(1, len(counts) - size + 1))
    ]


def cl100k_count() -> Callable[[str], int]:
    from llama_index.core.utils import get_tokenizer

    encode = get_tokenizer()
    return lambda text: len(encode(text))


def _ns_per_call(function: Callable[[str], object], text: str, number: int) -> float:
    best = math.inf
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(number):
            function(text)
        best = min(best, (time.perf_counter_ns() - start) / number)
    return best


def timing_rows(rows: list[dict[str, str]], count: Callable[[str], int]) -> list[str]:
    """ns per call (best of 5 runs) of the estimate, ``len`` and ``-(-len // 4)`` for a
    50-word English message and an English text of about 2,000 tokens."""
    from cupel.counting import estimate_tokens

    message = " ".join(" ".join(_lines(ENGLISH)).split()[:50])
    english = " ".join(r["text"] for r in rows if r["category"] == "english")
    long_text = english[: english.rindex(" ", 0, 9_000)]
    functions: dict[str, Callable[[str], object]] = {
        "estimate_tokens": estimate_tokens,
        "len": len,
        "-(-len // 4)": lambda text: -(-len(text) // 4),
    }
    lines = []
    for text, number in [(message, 20_000), (long_text, 1_000)]:
        times = "  ".join(
            f"{name} {_ns_per_call(f, text, number):,.0f}" for name, f in functions.items()
        )
        lines.append(f"{len(text):,} chars, {count(text):,} tokens: {times}")
    return lines


def check(rows: list[dict[str, str]]) -> None:
    count = cl100k_count()
    by_category = ratios(rows, count)
    every = [r for values in by_category.values() for r in values]
    print(f"{'category':12} {'n':>4} {'median':>7} {'p1':>7} {'p99':>7} {'worst under':>12}")
    for category, values in [*by_category.items(), ("ALL", every)]:
        worst = max(0.0, 1 - min(values))
        median, p1, p99 = (percentile(values, q) for q in (50, 1, 99))
        print(f"{category:12} {len(values):4} {median:7.3f} {p1:7.3f} {p99:7.3f} {worst:11.1%}")
    from cupel.counting import estimate_tokens

    print(f"\nshort messages: ratios per message and summed over {WINDOW} in a row")
    print(f"{'messages':12} {'n':>4} {'median':>7} {'p5':>7} {'window min':>11} {'mean':>7}")
    for name, texts in [("chat", chat_messages()), ("sentences", english_sentences(rows))]:
        estimates, counts = [estimate_tokens(t) for t in texts], [count(t) for t in texts]
        each = [e / c for e, c in zip(estimates, counts, strict=True)]
        windows = window_ratios(estimates, counts)
        median, p5 = percentile(each, 50), percentile(each, 5)
        mean = sum(windows) / len(windows)
        print(f"{name:12} {len(each):4} {median:7.3f} {p5:7.3f} {min(windows):11.3f} {mean:7.3f}")
    print("\nns per call (best of 5 runs):")
    for line in timing_rows(rows, count):
        print(f"  {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="compare estimate_tokens with cl100k_base instead"
    )
    args = parser.parse_args(argv)
    if args.check:
        check(read_corpus())
        return 0
    CORPUS_PATH.parent.mkdir(parents=True, exist_ok=True)
    CORPUS_PATH.write_text(to_jsonl(generate()), encoding="utf-8")
    print(f"wrote {CORPUS_PATH} ({CORPUS_PATH.stat().st_size:,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
