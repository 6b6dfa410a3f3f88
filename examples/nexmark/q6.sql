-- Nexmark q6, from github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q6.sql
-- (Apache License 2.0). The datagen table and its views are Flink nexmark's ddl_gen.sql and
-- ddl_views.sql with wmrun's 'nexmark' connector options. The query text is corrected where it
-- is invalid as written (Flink does not run it: see its TODO below), and only there:
-- `customTime` (no column of the views) is `dateTime`; the `WHERE rownum <= 1` is moved into a
-- SELECT around the ranking (a WHERE cannot read a column its own SELECT defines); `A.id`,
-- `A.seller`, `B.price` in the ranking's SELECT, where `A` and `B` are out of scope, are `id`,
-- `seller`, `price`. examples/nexmark/README.md says why, row by row.
-- DDL changes: the sink table's connector is 'print' (Flink's file: 'blackhole') so that the
-- results show; its `seller` is BIGINT (Flink's file: VARCHAR, but the query's seller is a BIGINT).
-- Run: wmrun --sql examples/nexmark/q6.sql (examples/nexmark/README.md)

CREATE TABLE datagen (
    event_type int,
    person ROW<
        id  BIGINT,
        name  VARCHAR,
        emailAddress  VARCHAR,
        creditCard  VARCHAR,
        city  VARCHAR,
        state  VARCHAR,
        `dateTime` TIMESTAMP(3),
        extra  VARCHAR>,
    auction ROW<
        id  BIGINT,
        itemName  VARCHAR,
        description  VARCHAR,
        initialBid  BIGINT,
        reserve  BIGINT,
        `dateTime`  TIMESTAMP(3),
        expires  TIMESTAMP(3),
        seller  BIGINT,
        category  BIGINT,
        extra  VARCHAR>,
    bid ROW<
        auction  BIGINT,
        bidder  BIGINT,
        price  BIGINT,
        channel  VARCHAR,
        url  VARCHAR,
        `dateTime`  TIMESTAMP(3),
        extra  VARCHAR>,
    `dateTime` AS
        CASE
            WHEN event_type = 0 THEN person.`dateTime`
            WHEN event_type = 1 THEN auction.`dateTime`
            ELSE bid.`dateTime`
        END,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
    'connector' = 'nexmark',
    'first-event.rate' = '100',
    'events.num' = '10000',
    'seed' = '1'
);

CREATE VIEW person AS
SELECT
    person.id,
    person.name,
    person.emailAddress,
    person.creditCard,
    person.city,
    person.state,
    `dateTime`,
    person.extra
FROM datagen WHERE event_type = 0;

CREATE VIEW auction AS
SELECT
    auction.id,
    auction.itemName,
    auction.description,
    auction.initialBid,
    auction.reserve,
    `dateTime`,
    auction.expires,
    auction.seller,
    auction.category,
    auction.extra
FROM datagen WHERE event_type = 1;

CREATE VIEW bid AS
SELECT
    bid.auction,
    bid.bidder,
    bid.price,
    bid.channel,
    bid.url,
    `dateTime`,
    bid.extra
FROM datagen WHERE event_type = 2;

-- -------------------------------------------------------------------------------------------------
-- Query 6: Average Selling Price by Seller
-- -------------------------------------------------------------------------------------------------
-- What is the average selling price per seller for their last 10 closed auctions.
-- Shares the same ‘winning bids’ core as for Query4, and illustrates a specialized combiner.
-- -------------------------------------------------------------------------------------------------

CREATE TABLE nexmark_q6 (
  seller BIGINT,
  avg_price  BIGINT
) WITH (
  'connector' = 'print'
);

-- TODO: this query is not supported yet in Flink SQL, because the OVER WINDOW operator doesn't
--  support to consume retractions.
INSERT INTO nexmark_q6
SELECT
    Q.seller,
    AVG(Q.price) OVER
        (PARTITION BY Q.seller ORDER BY Q.dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
FROM (
    SELECT * FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY id, seller ORDER BY price DESC) AS rownum
    FROM (SELECT A.id, A.seller, B.price, B.dateTime
        FROM auction AS A,
            bid AS B
        WHERE A.id = B.auction
            and B.dateTime between A.dateTime and A.expires)
    )
    WHERE rownum <= 1
) AS Q;
